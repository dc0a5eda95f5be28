-- Shared head of every per-show script. Every key of a show carries the same hash tag, so a
-- script touches one Redis Cluster slot. Keys and arguments come by name, from one Rust type
-- each (`SharedArgs` and `Call` in redis/mod.rs), as JSON: ARGV[1] the store's settings,
-- the same text on every call from one store (`keys` names each of KEYS in turn), ARGV[2] the
-- show's names and the script's own arguments (a struct of its own beside the Rust that runs
-- it; absent when not given). `bind` reads them into the names below: every script's first
-- step.
-- Replies go by name too: a script's body returns one table, which is answered as one JSON
-- object and decoded in Rust into one type per reply (`<concern>/reply.rs`). A script with several
-- outcomes names its own in `outcome`; a show a script will not serve is answered
-- `{refused = 'no_such_show' | 'lost' | 'ended'}`, alike from every script. Epochs travel as
-- text both ways: cjson writes numbers with 14 significant digits.
-- The scripts run as one library of Redis Functions (loaded once; Redis >= 7) or, on an older
-- Redis, each by SHA with this prelude in front (redis/mod.rs builds both).
local A, S
local Q, SEQ, HEAD, LEFT, VER, RATE, ADMISSIONS, FENCE, TICK, CAP, META, HOLDS, SPENT, FLOW,
  SEEN, AUDIT, LOSTFANS, IDEM, MENDED, AWAY, PARKED, BACK, INSTANCES, EXPIRED, CALLS, CALLQ, ON,
  BYPASSED, LINKS, LANES, CODES, CODESTAT, SAMPLES
local SHOW, DEFAULT_RATE, TTL, ADMITTED, CHANNEL, DEFAULT_CAP, PUBLISH
-- The keys that hold a show's state (not its meta, nor the per-ticket admissions, which run
-- out by themselves and are void under another epoch).
local function state_keys()
  return {Q, SEQ, HEAD, LEFT, VER, RATE, ADMISSIONS, FENCE, TICK, CAP, HOLDS, SPENT, FLOW, SEEN,
    AUDIT, IDEM, AWAY, PARKED, BACK, INSTANCES, EXPIRED, CALLS, CALLQ, BYPASSED, LANES, SAMPLES}
end
-- The store's settings as last decoded: a library of functions keeps them between calls, so
-- they are decoded again only when another store (or version) sends other ones. P: each key's
-- name to its place in KEYS, worked out with them.
local shared_text, P
local function bind(keys, argv)
  if argv[1] ~= shared_text then
    S = cjson.decode(argv[1])
    shared_text = argv[1]
    P = {}
    for i, name in ipairs(S.keys) do P[name] = i end
  end
  A = cjson.decode(argv[2])
  Q, SEQ, HEAD, LEFT, VER, RATE, ADMISSIONS, FENCE, TICK, CAP, META, HOLDS, SPENT, FLOW, SEEN,
    AUDIT, LOSTFANS, IDEM, MENDED, AWAY, PARKED, BACK, INSTANCES, EXPIRED, CALLS, CALLQ =
    keys[P.queue], keys[P.seq], keys[P.head], keys[P.left], keys[P.version], keys[P.rate],
    keys[P.admissions], keys[P.fence], keys[P.tick], keys[P.cap], keys[P.meta], keys[P.holds],
    keys[P.spent], keys[P.flow], keys[P.seen], keys[P.audit], keys[P.lostfans], keys[P.idem],
    keys[P.mended], keys[P.away], keys[P.parked], keys[P.back], keys[P.instances],
    keys[P.expired], keys[P.calls], keys[P.callq]
  -- Each instance's set of the tickets it holds a live stream of: `…:on:<instance>`, beside
  -- the show's other keys (same hash tag, so the same slot).
  ON = string.sub(META, 1, -5) .. 'on:'
  -- The admissions bypass rules made that still run (ticket → until, ms), and each signed
  -- link used (`…:link:<id>`, kept until the link's end): beside the show's keys alike.
  BYPASSED = string.sub(META, 1, -5) .. 'bypassed'
  LINKS = string.sub(META, 1, -5) .. 'link:'
  -- Lanes (docs/lanes.md): each lane's sequence and head (`seq:<slot>`, `head:<slot>`), and
  -- the show's access codes (their hashes → `lane|uses left`, and each lane's counts), which
  -- outlive an epoch as the settings do.
  LANES = string.sub(META, 1, -5) .. 'lanes'
  CODES = string.sub(META, 1, -5) .. 'codes'
  CODESTAT = string.sub(META, 1, -5) .. 'codestat'
  -- The report's samples (store/samples, docs/report.md): one a tick, of this incarnation.
  SAMPLES = string.sub(META, 1, -5) .. 'samples'
  SHOW, ADMITTED, CHANNEL = A.show, A.admitted_prefix, A.channel
  DEFAULT_RATE, TTL, DEFAULT_CAP = S.default_rate, S.ttl_ms, S.default_cap
  -- Sharded pub/sub (a cluster of Redis >= 7): CHANNEL is the show's own, under its hash tag.
  PUBLISH = S.sharded and 'SPUBLISH' or 'PUBLISH'
end

-- The show's own waiting page (docs/pages.md), kept beside its meta as the settings are.
-- Named on demand, not in `bind`: only the page's scripts, meta and delete need it, and
-- every other call (joins, reads, ticks) should not pay for the name.
local function page_key()
  return string.sub(META, 1, -5) .. 'page'
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The configured rate, and the rate in force: lower while the pace follows a struggling
-- checkout (meta field `pace`, set by the admitter).
local function configured_rate() return tonumber(redis.call('GET', RATE) or DEFAULT_RATE) end
local function rate()
  local r = configured_rate()
  local p = tonumber(redis.call('HGET', META, 'pace') or '')
  if p and p < r then return p end
  return r
end
-- Most fans admitted and not yet done buying at once; 0: no cap.
local function cap() return tonumber(redis.call('GET', CAP) or DEFAULT_CAP) end
-- Admissions still running that have not bought yet (the buyers in the system behind).
local function active(now) return redis.call('ZCOUNT', ADMISSIONS, '(' .. now, '+inf') end
local function head() return tonumber(redis.call('GET', HEAD) or '0') end
local function is_open() return redis.call('HGET', META, 'open') == '1' end
-- The show's settings in force (`ShowSettings` in model/settings.rs, by its JSON names): those
-- its operator set, kept whole by configure.lua in META `settings`, with the running event's
-- laid over them while a schedule has one (META `in_force`, written by `apply_events`). A rule
-- reads its setting here, nil when never set. `m`: the meta as `show_meta` read it, which holds
-- them (no second read), if it did.
local function settings(m)
  local text
  if m then text = m.in_force or m.settings
  else
    local v = redis.call('HMGET', META, 'in_force', 'settings')
    text = v[1] or v[2]
  end
  return cjson.decode(text or '{}')
end
-- The settings `all` (a table of them by their JSON names) as META `settings` keeps them.
-- cjson writes an empty list as `{}`: an empty schedule is left out (none), and every other
-- empty list is written back as the list it was sent as.
local function settings_text(all)
  if all.events and next(all.events) == nil then all.events = nil end
  -- Every setting that is a table is a list (pushServices, bypass): an empty one is written
  -- back as a list.
  local empty = {}
  for name, value in pairs(all) do
    if type(value) == 'table' and next(value) == nil then empty[#empty + 1] = name end
  end
  local text = cjson.encode(all)
  for _, name in ipairs(empty) do
    text = (string.gsub(text, '"' .. name .. '":{}', '"' .. name .. '":[]'))
  end
  return text
end
-- Presence (docs/presence.md). A waiting fan is present while a live stream of its ticket is
-- open on some instance (each instance's set ON..instance, reported by presence.lua), or for
-- `presenceGraceSeconds` after its last poll or its last stream ended: AWAY keeps, for the
-- fans with no stream open, when they were last seen (ms); a ticket absent from it is present.
-- With `awayHoldSeconds` (not 0), a tick passes over away fans: PARKED keeps them by arrival,
-- holding their place ahead of everyone queued; BACK, those of them seen again, whom the next
-- tick lets in first. Away longer than the hold, the place is released (`expired`).
-- `st`: the settings; answers the grace and the hold, in ms (hold 0: presence not heeded).
local function away_rules(st)
  return tonumber(st.presenceGraceSeconds or 30) * 1000, tonumber(st.awayHoldSeconds or 900) * 1000
end
-- `ticket` will not be called: it left, was let in, or lost its place.
local function uncall(ticket)
  redis.call('HDEL', CALLS, ticket)
  redis.call('ZREM', CALLQ, ticket)
end
-- Whether `ticket` counts as present at `now` (ms), with the grace `grace` (ms).
local function present(ticket, now, grace)
  local seen = redis.call('ZSCORE', AWAY, ticket)
  return (not seen) or tonumber(seen) >= now - grace
end
-- Lanes (docs/lanes.md, model/lanes.rs): lane k's arrivals run from k * LANE + 1, each lane
-- dense, so an arrival names its lane and one queue (Q) holds them all, the general queue
-- (lane 0) lowest.
local LANE = 1099511627776
local function lane_of(a) return math.floor(a / LANE) end
local function lane_range(k) return k * LANE, (k + 1) * LANE - 1 end
-- Parked fans of lane `k` (0 when not given), who hold places ahead of its queued ones.
local function parked_count(k)
  local lo, hi = lane_range(k or 0)
  return redis.call('ZCOUNT', PARKED, lo, hi)
end
-- Instances whose report of live streams still holds, at `now`: {instance = until_ms}; and
-- those whose report ran out (the same, `all`: HGETALL's answer, when read already).
local function live_instances(now, all)
  all = all or redis.call('HGETALL', INSTANCES)
  local live, dead = {}, {}
  for i = 1, #all, 2 do
    local u = tonumber(all[i + 1])
    if u and u > now then live[all[i]] = u else dead[all[i]] = u or now end
  end
  return live, dead
end
-- Whether some live instance but `except` holds a stream of `ticket`.
local function streamed_elsewhere(ticket, except, live)
  for instance in pairs(live) do
    if instance ~= except and redis.call('SISMEMBER', ON .. instance, ticket) == 1 then
      return true
    end
  end
  return false
end
-- Whether `ticket` still holds a place: queued, or parked.
local function holds_place(ticket)
  return redis.call('ZSCORE', Q, ticket) or redis.call('ZSCORE', PARKED, ticket)
end
-- `ticket` was seen at `at` (ms) with no stream open: its away clock starts there.
local function last_seen(ticket, at)
  if holds_place(ticket) then redis.call('ZADD', AWAY, at, ticket) end
end
-- A parked fan seen again goes to BACK, for the next tick to let in first.
local function came_back(ticket)
  local a = redis.call('ZSCORE', PARKED, ticket)
  if a then redis.call('ZADD', BACK, a, ticket) end
end
-- Instances that stopped reporting (they died): their streams ended when their report ran
-- out, so each of their fans streamed nowhere else is last seen then.
local function reap_instances(now)
  local live, dead = live_instances(now)
  for instance, u in pairs(dead) do
    for _, t in ipairs(redis.call('SMEMBERS', ON .. instance)) do
      if not streamed_elsewhere(t, instance, live) then last_seen(t, u) end
    end
    redis.call('DEL', ON .. instance)
    redis.call('HDEL', INSTANCES, instance)
  end
end

-- Where the on-sale stands (`Phase` in model/pace.rs, by code): 0 pending (made, not opened
-- yet, or scheduled), 1 open, 2 paused, 3 closed (no gate), 4 ended. Meta `open` says whether
-- the admitter serves it; meta `phase` names paused, closed and ended.
local PHASE_CODE = {paused = 2, closed = 3, ended = 4}
local PHASE_NAME = {[0] = 'pending', 'open', 'paused', 'closed', 'ended'}
-- The phase and the seats for sale (meta `stock`; 0: none set), in one read.
local function sale()
  local m = redis.call('HMGET', META, 'open', 'phase', 'stock')
  local ph = (m[1] == '1') and 1 or (PHASE_CODE[m[2] or ''] or 0)
  return ph, tonumber(m[3] or '0')
end
-- The meta fields a join and the pace it answers with read, in one call (HMGET): a table of
-- field to value (false when unset), which the helpers below take instead of reading them
-- one by one (`live_show`, `phase_of`, `draw_phase`, `pace_reply`, `standing`).
local JOIN_META = {'epoch', 'lost', 'deleted', 'open', 'phase', 'stock', 'challenge_bits',
  'opens_at', 'closed_n', 'draw_key', 'pace', 'change_at', 'change_rate', 'end_reason', 'window',
  'settings', 'in_force', 'event_at', 'event_rate', 'change_masked', 'lane_slots'}
local function show_meta()
  local v = redis.call('HMGET', META, unpack(JOIN_META))
  return {epoch = v[1], lost = v[2], deleted = v[3], open = v[4], phase = v[5], stock = v[6],
    challenge_bits = v[7], opens_at = v[8], closed_n = v[9], draw_key = v[10], pace = v[11],
    change_at = v[12], change_rate = v[13], end_reason = v[14], window = v[15], settings = v[16],
    in_force = v[17], event_at = v[18], event_rate = v[19], change_masked = v[20],
    lane_slots = v[21]}
end
-- The show's lanes by name → slot (META `lane_slots`): a lane takes a slot when its first
-- fan joins and keeps it while fans wait in it. `m`: the meta as `show_meta` read it, if it did.
local function lane_slots(m)
  local text
  if m then text = m.lane_slots else text = redis.call('HGET', META, 'lane_slots') end
  if not text then return {} end
  return cjson.decode(text)
end
-- Fans queued in lane `k` (its parked ones aside).
local function lane_queued(k)
  local lo, hi = lane_range(k)
  return redis.call('ZCOUNT', Q, lo, hi)
end
-- The highest arrival of lane `k` admitted so far.
local function lane_head(k)
  if k == 0 then return head() end
  return tonumber(redis.call('HGET', LANES, 'head:' .. k) or (k * LANE))
end
-- The lanes served, in the order a tick serves them (`st`: the settings in force; `m` as
-- above): first those the settings no longer list while fans wait in them (their fans came
-- in through a lane, and keep it), with priority; then the listed lanes with priority, in
-- order; then the shared ones, and the general queue (slot 0) last with the share the lanes
-- leave. Each {slot, name, share, priority}; a listed lane nobody joined yet holds no slot and
-- is left out. nil when the show has no lanes.
local function served_lanes(st, m)
  local slots = lane_slots(m)
  local listed = st.lanes or {}
  if #listed == 0 and next(slots) == nil then return nil end
  local named, out, shared, gone = {}, {}, 0, {}
  for _, l in ipairs(listed) do
    named[l.name] = true
    shared = shared + (l.share or 0)
  end
  for name, k in pairs(slots) do
    if not named[name] then gone[#gone + 1] = {slot = k, name = name, share = 0, priority = true} end
  end
  table.sort(gone, function(a, b) return a.slot < b.slot end)
  for _, l in ipairs(gone) do out[#out + 1] = l end
  for _, first in ipairs({true, false}) do
    for _, l in ipairs(listed) do
      if (l.priority == true) == first and slots[l.name] then
        out[#out + 1] = {slot = slots[l.name], name = l.name, share = l.share or 0,
          priority = l.priority == true}
      end
    end
  end
  out[#out + 1] = {slot = 0, name = '', share = 100 - shared, priority = false}
  return out
end
-- The slot of lane `name` (`st`: the settings in force), taking a free one when it has none:
-- a slot is free when no lane holds it, or its lane is no longer listed and empty. nil when
-- every slot is held.
local function lane_slot(name, st)
  local slots = lane_slots()
  if slots[name] then return slots[name] end
  local taken, named = {}, {}
  for _, l in ipairs(st.lanes or {}) do named[l.name] = true end
  for n, k in pairs(slots) do
    if not named[n] and lane_queued(k) + parked_count(k) == 0 then
      slots[n] = nil
    else
      taken[k] = true
    end
  end
  for k = 1, 8 do
    if not taken[k] then
      slots[name] = k
      redis.call('HSET', META, 'lane_slots', cjson.encode(slots))
      return k
    end
  end
  return nil
end
-- How a tick's `places` go to the lanes `lanes` (as `served_lanes` orders them), `w[slot]`
-- fans queued in each, at the store's second `second` (docs/lanes.md): the lanes with
-- priority take all they can, in order; the shared lanes split the rest by their shares,
-- a lane with fewer fans than its part leaving the rest to the others; each part is rounded
-- down or up by systematic rounding from the second (its fraction of the golden ratio), so the
-- parts sum to the places and every lane gets its share over the seconds. `verify` works the
-- same out again (draw/lanes.rs), so the operations and their order are part of the audit's
-- contract. Answers {slot = places}.
local function lane_quotas(places, lanes, w, second)
  local q, left = {}, places
  for _, l in ipairs(lanes) do
    q[l.slot] = 0
    if l.priority then
      local t = math.min(w[l.slot], left)
      q[l.slot], left = t, left - t
    end
  end
  local x, open = {}, {}
  for _, l in ipairs(lanes) do
    if not l.priority and w[l.slot] > 0 then
      open[#open + 1] = l
      x[l.slot] = 0
    end
  end
  while left > 0 and #open > 0 do
    local total = 0
    for _, l in ipairs(open) do total = total + l.share end
    local full, rest = {}, {}
    for _, l in ipairs(open) do
      if x[l.slot] + left * l.share / total >= w[l.slot] then
        full[#full + 1] = l
      else
        rest[#rest + 1] = l
      end
    end
    if #full == 0 then
      for _, l in ipairs(open) do x[l.slot] = x[l.slot] + left * l.share / total end
      left = 0
    else
      for _, l in ipairs(full) do
        left = left - (w[l.slot] - x[l.slot])
        x[l.slot] = w[l.slot]
      end
      open = rest
    end
  end
  local u = (second * 0.6180339887498949) % 1
  local c = 0
  for _, l in ipairs(lanes) do
    if x[l.slot] then
      local from = math.floor(c + u + 1e-9)
      c = c + x[l.slot]
      q[l.slot] = math.floor(c + u + 1e-9) - from
    end
  end
  return q
end
-- The lanes as the pace tells them (`LaneFigure` in model/lanes.rs), from the meta `m` as
-- `show_meta` read it: nil when the show has none but the general queue.
local function lane_figures(m)
  local text = m.in_force or m.settings
  if not m.lane_slots and not (text and string.find(text, '"lanes"', 1, true)) then return nil end
  local served = served_lanes(cjson.decode(text or '{}'), m)
  if not served or #served < 2 then return nil end
  local out = {}
  for _, l in ipairs(served) do
    local k = l.slot
    local parked = parked_count(k)
    out[#out + 1] = {slot = k, name = l.name, share = l.share, priority = l.priority,
      waiting = lane_queued(k) + parked, head = lane_head(k), parked = parked}
  end
  return out
end
-- The phase's code, from meta read by `show_meta`.
local function phase_of(m) return (m.open == '1') and 1 or (PHASE_CODE[m.phase or ''] or 0) end
local function phase() return (sale()) end
local function stock()
  local _, st = sale()
  return st
end
-- The seats left once orders took theirs (-1: no stock).
local function seats_left(st)
  if st == 0 then return -1 end
  return math.max(st - redis.call('HLEN', HOLDS), 0)
end
-- The seats an admission may still take at `now`: neither ordered nor held by an admission
-- still running (nil: the show has no stock).
local function seats_free(now)
  local st = stock()
  if st == 0 then return nil end
  return math.max(st - redis.call('HLEN', HOLDS) - active(now), 0)
end

-- The longest an admission nobody takes up holds its place (ms): the arrival window, when
-- it is shorter than the TTL and a cap makes it release places; else the TTL. `c`: the cap;
-- `w`: meta `window` as read (false: the store's default).
local function longest_untaken_hold(c, w)
  local window = tonumber(w or S.default_window_ms)
  if c > 0 and window > 0 and window < TTL then return window end
  return TTL
end

-- How long an admission holds its place behind the gate (seconds), and a variance for the
-- range. Counted as time held over admissions ended: the ended ones' holds plus the ages of
-- those still running (a buyer who is quick is measured at once, one who takes the whole TTL
-- only when it runs out; counting only ended holds would be biased short until then), with the
-- prior — a hold anywhere from nothing to the longest an untaken admission holds (the arrival
-- window, or the whole TTL), mean half of it — weighing as one turnover of the cap. FLOW keeps: done_n/done_sum (ended, their holds), run_n/run_sum (running, the sum
-- of their admission times), all in seconds; `f` holds them as read (`pace`), `now` is in ms.
local function hold(c, w, f, now)
  local dn, ds = tonumber(f[2]) or 0, tonumber(f[3]) or 0
  local rn, rs = tonumber(f[4]) or 0, tonumber(f[5]) or 0
  local longest = longest_untaken_hold(c, w) / 1000
  local k = math.max(c, 1)
  local running = math.max(rn * now / 1000 - rs, 0)
  local mean = (k * longest / 2 + ds + running) / (k + dn)
  return mean, longest * longest / 12 * k / (k + dn)
end

-- `times` admissions made at `at` ms (they run from now).
local function admitted_now(times, at)
  redis.call('HINCRBY', FLOW, 'run_n', times)
  redis.call('HINCRBYFLOAT', FLOW, 'run_sum', times * at / 1000)
end

-- An admission made at `since` ms ended at `now` ms (bought, given back, released, run out).
local function held(since, now)
  redis.call('HINCRBY', FLOW, 'done_n', 1)
  redis.call('HINCRBYFLOAT', FLOW, 'done_sum', (now - since) / 1000)
  redis.call('HINCRBY', FLOW, 'run_n', -1)
  redis.call('HINCRBYFLOAT', FLOW, 'run_sum', -since / 1000)
end

-- An admitted ticket's admission ends now: its hold is measured.
local function ended(ticket, now)
  local expires = redis.call('ZSCORE', ADMISSIONS, ticket)
  if expires then held(tonumber(expires) - TTL, now) end
end

-- The pace at the rate in force `r` under the cap `c` (meta `window` `w`, the time `now` in
-- ms): places offered a second (mean, variance), and whether the last tick found every place
-- taken. Without a cap, the rate in force. With one, places free up as fast as buyers finish:
-- cap over the mean time a place stays taken (Little's law behind the gate), never above the
-- rate. FLOW is read once; it also answers the last tick's away figures (`away_figures`).
local function pace(r, c, w, now)
  local f = redis.call('HMGET', FLOW, 'full', 'done_n', 'done_sum', 'run_n', 'run_sum', 'away',
    'passed_over')
  local full = f[1] == '1'
  local away = {tonumber(f[6]) or 0, tonumber(f[7]) or 0}
  if c == 0 then return r, 0, full, away, 0 end
  local mean, var = hold(c, w, f, now)
  -- Little's law takes the places behind the gate to free one by one, the oldest first: in
  -- its stride a full cap's admissions are of every age, and the first frees in half a
  -- hold. Admissions all made lately (a cap that just filled at an opening or after a lull)
  -- free later: by half a hold less their mean age (`settle`, seconds, when the cap is full).
  local settle = 0
  local rn = tonumber(f[4]) or 0
  if rn >= c and rn > 0 then
    local age = (rn * now / 1000 - (tonumber(f[5]) or 0)) / rn
    settle = math.max(mean / 2 - age, 0)
  end
  -- A place freed is filled at the next tick: half a second later, on average.
  mean = mean + 0.5
  local flow = math.min(r, c / mean)
  local spread = flow * math.sqrt(var) / mean / 2
  return flow, spread * spread, full, away, settle
end
-- Where away fans are passed over (`hold` > 0), what every ETA skips, measured once a tick
-- at `now` (ms) with the grace `grace` (ms) and kept in FLOW for `pace` to read: the share of
-- the queued fans away (thousandths) and the fans passed over who hold their places and are
-- not back (those back are let in first, so they are not skipped). AWAY keeps place holders
-- only (a fan let in or gone leaves it); the parked ones in it past the grace are those not
-- back. Answers how many of the queued fans are away (the report's sample keeps it).
local function away_figures(now, grace, hold)
  local away = redis.call('ZCOUNT', AWAY, '-inf', '(' .. (now - grace))
  if hold == 0 then
    redis.call('HDEL', FLOW, 'away', 'passed_over')
    return away > 0 and math.min(away, redis.call('ZCARD', Q)) or 0
  end
  local parked = redis.call('ZCARD', PARKED)
  local back = parked > 0 and redis.call('ZCARD', BACK) or 0
  local share = 0
  if away > 0 then
    local queued = redis.call('ZCARD', Q)
    away = math.min(math.max(away - parked + back, 0), queued)
    share = queued > 0 and math.floor(away * 1000 / queued) or 0
  end
  redis.call('HSET', FLOW, 'away', share, 'passed_over', parked - back)
  return away
end
-- What a ticket's ETA is worked out from, and where its count goes on from (`PaceFigures` in
-- store/feed/mod.rs): the rate in force, the flow and its spread (thousandths), the phase's
-- name, whether the last tick found every place taken; when there is one, a rate change the
-- operator announced or the schedule holds (meta `change_at`, ms, and `change_rate`, or
-- `event_at` and `event_rate`: ms until it, its rate), the
-- second of the last tick, the seats left, and why an ended on-sale ended. Every join and
-- status answers with it, so what it needs is read in few calls: the meta fields `m` (read by
-- `show_meta`, or here when not given), the show's rate, cap, last tick and version in one
-- MGET, FLOW in one HMGET. Answers the pace, and the show's version.
local function pace_reply(m)
  m = m or show_meta()
  local k = redis.call('MGET', RATE, CAP, TICK, VER)
  local r = tonumber(k[1] or DEFAULT_RATE)
  local following = tonumber(m.pace or '')
  if following and following < r then r = following end
  local c = tonumber(k[2] or DEFAULT_CAP)
  -- The rate change ahead: the operator's, or the schedule's next (`apply_events`), the
  -- sooner of them.
  -- An operator's change that falls while an event sets the rate changes the show's own rate
  -- only (`apply_events` marks it masked): the event's rate stays in force, so none is told.
  local change_at, change_rate = m.change_at, m.change_rate
  if m.change_masked then change_at, change_rate = nil, nil end
  if m.event_rate and (not change_at or tonumber(m.event_at) < tonumber(change_at)) then
    change_at, change_rate = m.event_at, m.event_rate
  end
  local now = (c > 0 or change_at) and now_ms() or 0
  local mean, var, full, away, settle = pace(r, c, m.window, now)
  local ph = phase_of(m)
  local left = seats_left(tonumber(m.stock or '0'))
  return {
    rate = r, flow_milli = math.floor(mean * 1000 + 0.5),
    spread_milli = math.floor(math.sqrt(var) * 1000 + 0.5), phase = PHASE_NAME[ph], full = full,
    change_in_ms = change_at and math.max(tonumber(change_at) - now, 0) or nil,
    change_rate = change_at and tonumber(change_rate) or nil,
    tick_sec = tonumber(k[3] or ''),
    stock_left = left >= 0 and left or nil,
    reason = ph == 4 and (m.end_reason or nil) or nil,
    away_milli = away[1], passed_over = away[2],
    settle_ms = settle > 0 and math.floor(settle * 1000 + 0.5) or nil,
    lanes = lane_figures(m),
  }, tonumber(k[4] or '0')
end
-- The fair start's draw (src/draw.rs, which says why): a keyed permutation of 1..n, eight
-- Feistel rounds over 2h bits with cycle-walking, round function MurmurHash3's fmix32 of the
-- half XOR the round's key word. Lua numbers are doubles and `bit` works on 32-bit signed
-- integers, so products are taken in 16-bit halves and results kept unsigned.
local TWO32 = 4294967296
local function u32(x) if x < 0 then return x + TWO32 end return x end
local function mul32(a, b)
  local al, ah = a % 65536, math.floor(a / 65536)
  local bl, bh = b % 65536, math.floor(b / 65536)
  return (((ah * bl + al * bh) % 65536) * 65536 + al * bl) % TWO32
end
local function fmix32(x)
  x = u32(bit.bxor(x, bit.rshift(x, 16)))
  x = mul32(x, 2246822507)
  x = u32(bit.bxor(x, bit.rshift(x, 13)))
  x = mul32(x, 3266489909)
  return u32(bit.bxor(x, bit.rshift(x, 16)))
end
-- {n, h, keys} for `n` arrivals under the hex `key`.
local function permutation(key, n)
  local keys = {}
  for i = 1, 8 do keys[i] = tonumber(string.sub(key, i * 8 - 7, i * 8), 16) end
  local bits, m = 0, n - 1
  while m > 0 do bits = bits + 1; m = math.floor(m / 2) end
  local h = math.max(math.ceil(bits / 2), 1)
  return {n = n, h = h, size = 2 ^ h, keys = keys}
end
local function feistel_round(p, i, half)
  return fmix32(u32(bit.bxor(half, p.keys[i]))) % p.size
end
local function encrypt(p, x)
  local l, r = math.floor(x / p.size), x % p.size
  for i = 1, 8 do
    l, r = r, u32(bit.bxor(l, feistel_round(p, i, r)))
  end
  return l * p.size + r
end
local function decrypt(p, x)
  local l, r = math.floor(x / p.size), x % p.size
  for i = 8, 1, -1 do
    l, r = u32(bit.bxor(r, feistel_round(p, i, l))), l
  end
  return l * p.size + r
end
-- The place arrival `a` was drawn to, and the arrival drawn to place `k` (both 1..n).
local function drawn_place(p, a)
  local x = encrypt(p, a - 1)
  while x >= p.n do x = encrypt(p, x) end
  return x + 1
end
local function drawn_arrival(p, k)
  local x = decrypt(p, k - 1)
  while x >= p.n do x = decrypt(p, x) end
  return x + 1
end

-- Where a scheduled show's draw stands (meta fields `opens_at`, `closed_n` once the pre-queue
-- closed, `draw_key` once drawn): nil when the show was never scheduled, else {opens_at,
-- closed, p (the permutation once drawn)}. `sm`: the meta as `show_meta` read it, if it did.
local function draw_phase(sm)
  local m
  if sm then m = {sm.opens_at, sm.closed_n, sm.draw_key}
  else m = redis.call('HMGET', META, 'opens_at', 'closed_n', 'draw_key') end
  if not m[1] then return nil end
  local d = {opens_at = tonumber(m[1]), closed = tonumber(m[2] or '')}
  if m[3] and d.closed then d.p = permutation(m[3], d.closed) end
  return d
end

-- The place in the queue of arrival `a` (its drawn place, or its arrival number after the
-- pre-queue); nil while it waits in a pre-queue not drawn yet.
local function order_key(d, a)
  if not d then return a end
  if d.closed and a > d.closed then return a end
  if d.p then return drawn_place(d.p, a) end
  return nil
end

-- Where the parked ticket with arrival `a` stands: behind the parked fans of its lane who
-- arrived before it.
local function parked_standing(a)
  local lo = lane_range(lane_of(a))
  return {state = 'waiting', arrival = a, position = redis.call('ZCOUNT', PARKED, lo, a)}
end

-- Where the queued ticket with arrival `seq` stands (`TicketState` in model/mod.rs):
-- waiting at a position or, in a pre-queue not drawn yet, ms until the show opens. `m`: the
-- meta as `show_meta` read it, if it did.
local function standing(ticket, seq, m)
  local d = draw_phase(m)
  local key = order_key(d, seq)
  if not key then
    local opens_in = d.closed and 0 or math.max(d.opens_at - now_ms(), 0)
    return {state = 'pre_queue', arrival = seq, opens_in_ms = opens_in}
  end
  -- A lane's fan: its rank in its lane, behind the lane's parked fans.
  local k = lane_of(seq)
  if k > 0 then
    return {state = 'waiting', arrival = seq,
      position = redis.call('ZCOUNT', Q, k * LANE, seq) + parked_count(k)}
  end
  -- Parked fans (passed over while away) hold their places ahead of every queued one.
  local parked = parked_count()
  if d and d.p and seq <= d.closed then
    local hd = head()
    return {state = 'waiting', arrival = seq,
      position = key - hd - redis.call('ZCOUNT', LEFT, '(' .. hd, '(' .. key) + parked}
  end
  -- Everyone ahead is still in the queue, whatever their order: the rank says it.
  return {state = 'waiting', arrival = seq,
    position = redis.call('ZRANK', Q, ticket) + 1 + parked}
end

-- Appends a record (field, value, …) to the show's audit, keeping the newest S.audit_max.
local function audit(fields)
  redis.call('XADD', AUDIT, 'MAXLEN', '~', S.audit_max, '*', unpack(fields))
end

-- Appends a tick's sample to the show's report samples (`Sample` in store/samples), keeping
-- the newest S.samples_max: the pace `e` the tick published (no ticket: `ended` is left out),
-- the arrival counter (the general queue's; `laned`: the lanes' together), the queue, the
-- fans let in, the buyers behind the gate and the queued fans away (`away`, as
-- `away_figures` counted them).
local function sample(at, epoch, e, admitted_now, laned, away)
  e.ended = nil
  redis.call('XADD', SAMPLES, 'MAXLEN', '~', S.samples_max, '*', 'at_ms', at, 'epoch', epoch,
    'arrivals', tonumber(redis.call('GET', SEQ) or '0'), 'laned', laned,
    'queued', redis.call('ZCARD', Q), 'admitted', admitted_now, 'active', active(at),
    'away', away, 'pace', cjson.encode(e))
end

-- Arrival numbers as inclusive ranges of consecutive numbers: '4-6,9,2-3'.
local function ranges(arrivals)
  local out, from, to = {}, nil, nil
  local function flush()
    if from then out[#out + 1] = (from == to) and tostring(from) or (from .. '-' .. to) end
  end
  for _, a in ipairs(arrivals) do
    if from and a == to + 1 then to = a else flush(); from, to = a, a end
  end
  flush()
  return table.concat(out, ',')
end

local function version() return tonumber(redis.call('GET', VER) or '0') end

-- The show's epoch (a string of digits) if an operator made it and its state is whole;
-- else nil and the reply the script must give: nobody made it, or it was lost. `sm`: the meta
-- as `show_meta` read it, if it did.
local function live_show(sm)
  local m
  if sm then m = {sm.epoch, sm.lost, sm.deleted}
  else m = redis.call('HMGET', META, 'epoch', 'lost', 'deleted') end
  if not m[1] or m[3] then return nil, {refused = 'no_such_show'} end
  if m[2] == '1' then return nil, {refused = 'lost'} end
  return m[1], nil
end

-- A rule's refusal for now: `why`, in words a client may read, and when to try again (ms).
-- The whole call's reply ({refused = unavailable(…)}), or one join's outcome (`join.lua`),
-- alike: the client is answered 503 with `Retry-After` (`StoreError::NotNow`).
local function unavailable(why, retry_after_ms)
  return {outcome = 'unavailable', why = why, retry_after_ms = retry_after_ms}
end

-- Whether `ticket` holds an admission of this epoch that has not run out. The admission
-- keeps `epoch|arrival` (the arrival number the audit names the buyer by).
local function admitted(ticket, epoch)
  local v = redis.call('GET', ADMITTED .. ticket)
  return v == epoch or (v and string.match(v, '^(%d+)|') == epoch) or false
end
-- The arrival number `ticket` was admitted under (0 when unknown).
local function admitted_arrival(ticket)
  local v = redis.call('GET', ADMITTED .. ticket)
  return tonumber(v and string.match(v, '|(%d+)$') or '0')
end

-- One message per change, published inside the script that made it: subscribers see the
-- changes of a show in the order they happened, each with its epoch and version. Its fields
-- are `ShowEvent`'s (protocol.rs), which a test decodes from what is published here. Every
-- script publishes through this one function.
-- `ended`: the tickets whose admission ended in this change (released untaken), if any.
local function publish(kind, epoch, ver, hd, left, admitted_now, at, ended)
  -- The event carries the pace as every reply does (`PaceFigures` in store/feed/mod.rs): a field
  -- added to `pace_reply` travels in both.
  local e = pace_reply()
  e.show, e.epoch, e.version, e.kind, e.head, e.left = SHOW, tonumber(epoch), ver, kind, hd, left
  e.open, e.admitted, e.ttl_ms, e.at_ms = e.phase == 'open', admitted_now, TTL, at
  e.ended, e.parked = ended, parked_count()
  redis.call(PUBLISH, CHANNEL, cjson.encode(e))
  return e
end

-- Tells every hub that `ticket`'s admission ended (spent by an order or a redemption, or
-- given back), so that no instance lets its pass through any more. No position moved: the
-- version stays, and the hubs' mirrors take nothing from it.
local function publish_ended(epoch, ticket, at)
  redis.call(PUBLISH, CHANNEL, cjson.encode({
    show = SHOW, epoch = tonumber(epoch), version = version(), kind = 'spent', head = head(),
    ended = {ticket}, ttl_ms = TTL, at_ms = at,
  }))
end

-- Puts the on-sale in `name`d phase (paused, closed, ended; admission stops in each) and
-- tells every hub; nothing when it stood there already. With ended, `why` (or none).
local function enter_phase(name, epoch, why)
  local m = redis.call('HMGET', META, 'open', 'phase', 'end_reason')
  if m[1] ~= '1' and m[2] == name and m[3] == why then return end
  redis.call('HSET', META, 'open', '0', 'phase', name)
  if why then redis.call('HSET', META, 'end_reason', why) else redis.call('HDEL', META, 'end_reason') end
  local now = now_ms()
  audit({'kind', 'phase', 'at_ms', now, 'epoch', epoch, 'phase', name})
  publish('rate', epoch, redis.call('INCR', VER), head(), nil, 0, now)
end

-- A show's schedule of events (settings `events`, docs/events.md). META `events` keeps it as
-- configure.lua was handed it: in order, none overlapping, each {s = start, e = end or nil
-- (ms), set = the settings an event may set}; an event without an end runs until the next
-- starts. Works out the settings in force at `now` (the show's, with the running event's laid
-- over them) and writes them where the rules read them: the rate (RATE), the cap (CAP), the
-- join's proof of work (meta `challenge_bits`), the rest whole in meta `in_force`
-- (`settings()`); `event_at` is when the schedule next changes anything (the admitter's tick
-- applies it then), `event_rate` the rate from then when it differs (every ETA counts with it,
-- as with an announced rate change). A change of the running event (meta `event`, its place
-- in the list from 1) is audited, with `fence` (the admitter's token, 0 for the operator), and
-- published. An event that starts a phase (`ph`: open, paused, ended) puts the on-sale in it
-- as it starts, only when `phases` (the admitter's fenced call): any other caller leaves that
-- whole change, its settings too, to the admitter's next tick. Answers whether the running
-- event changed.
local function apply_events(now, epoch, fence, phases)
  local m = redis.call('HMGET', META, 'events', 'settings', 'event', 'change_at')
  local events = cjson.decode(m[1] or '[]')
  local base = cjson.decode(m[2] or '{}')
  base.events = nil
  local function running_at(t)
    for i, e in ipairs(events) do
      local ends = e.e or (events[i + 1] and events[i + 1].s)
      if e.s <= t and (not ends or t < ends) then return i end
    end
    return nil
  end
  local function in_force(i)
    local all = {}
    for name, value in pairs(base) do all[name] = value end
    if i then for name, value in pairs(events[i].set) do all[name] = value end end
    return all
  end
  local running = running_at(now)
  -- The running event, by its place, what it sets and the phase it starts (its keys in
  -- order, so that the same settings always read the same): a change of any is a change of
  -- the schedule in force.
  local is = ''
  if running then
    local set, names = events[running].set, {}
    for name in pairs(set) do names[#names + 1] = name end
    table.sort(names)
    local parts = {tostring(running)}
    for _, name in ipairs(names) do parts[#parts + 1] = name .. '=' .. cjson.encode(set[name]) end
    if events[running].ph then parts[#parts + 1] = 'phase=' .. events[running].ph end
    is = table.concat(parts, ';')
  end
  local ph = running and events[running].ph
  if ph and not phases and (m[3] or '') ~= is then return false end
  local st = in_force(running)
  -- The next time anything changes: a start or an end after now.
  local next_at
  for _, e in ipairs(events) do
    for _, t in ipairs({e.s, e.e or e.s}) do
      if t > now and (not next_at or t < next_at) then next_at = t end
    end
  end
  if st.admitPerSecond then redis.call('SET', RATE, st.admitPerSecond) else redis.call('DEL', RATE) end
  if st.maxActiveBuyers then redis.call('SET', CAP, st.maxActiveBuyers) else redis.call('DEL', CAP) end
  if st.joinChallengeBits then
    redis.call('HSET', META, 'challenge_bits', st.joinChallengeBits)
  else
    redis.call('HDEL', META, 'challenge_bits')
  end
  if #events > 0 then
    redis.call('HSET', META, 'in_force', cjson.encode(st))
  else
    redis.call('HDEL', META, 'in_force', 'events')
  end
  local rate_then
  if next_at then
    rate_then = in_force(running_at(next_at)).admitPerSecond or DEFAULT_RATE
    redis.call('HSET', META, 'event_at', next_at)
  else
    redis.call('HDEL', META, 'event_at')
  end
  if rate_then and rate_then ~= (st.admitPerSecond or DEFAULT_RATE) then
    redis.call('HSET', META, 'event_rate', rate_then)
  else
    redis.call('HDEL', META, 'event_rate')
  end
  -- An operator's announced change that will fall while an event sets the rate.
  local change_at = tonumber(m[4] or '')
  local over = change_at and running_at(change_at)
  if over and events[over].set.admitPerSecond then
    redis.call('HSET', META, 'change_masked', '1')
  else
    redis.call('HDEL', META, 'change_masked')
  end
  if (m[3] or '') == is then return false end
  local record = {'kind', 'event', 'at_ms', now, 'epoch', epoch, 'fence', fence, 'rate', rate()}
  if running then
    redis.call('HSET', META, 'event', is)
    record[#record + 1], record[#record + 2] = 'event', running
  else
    redis.call('HDEL', META, 'event')
  end
  audit(record)
  if ph == 'open' then
    -- As `open.lua` would, but for a fair start, which opens by itself after its draw.
    local d = draw_phase()
    if not is_open() and not (d and not d.p) then
      redis.call('HSET', META, 'open', '1')
      redis.call('HDEL', META, 'phase', 'end_reason')
      audit({'kind', 'phase', 'at_ms', now, 'epoch', epoch, 'phase', 'open'})
    end
  elseif ph then
    enter_phase(ph, epoch)
  end
  return true
end
-- A schedule's change that came while no tick runs (a show not open: pending, paused, closed,
-- ended) is applied by the next call that reads the show (`m`, as `show_meta` read it): a join or a
-- status read. Answers the meta as it now stands.
local function events_due(m, epoch)
  -- An open show's changes are the admitter's, fenced, at its next tick.
  if phase_of(m) == 1 then return m end
  if not m.event_at or tonumber(m.event_at) > now_ms() then return m end
  local now = now_ms()
  if apply_events(now, epoch, 0, false) then
    publish('rate', epoch, redis.call('INCR', VER), head(), nil, 0, now)
  end
  return show_meta()
end

-- Creates the show's meta under `epoch` after wiping whatever state an earlier incarnation
-- left behind.
local function create(epoch, now)
  redis.call('DEL', unpack(state_keys()))
  redis.call('DEL', META)
  redis.call('HSET', META, 'epoch', epoch, 'open', '0', 'lost', '0', 'created_ms', now)
end
