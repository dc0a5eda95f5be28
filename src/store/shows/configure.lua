-- Creates the show if nobody did (A.new_epoch) and applies the operator's settings, each
-- optional: A.rate, A.cap (on active buyers), A.window_ms (arrival window), A.health_url (the
-- checkout's; '' stops following it), A.floor (the lowest rate while following it),
-- A.change_at and A.change_rate (a rate change announced for that time, ms; A.change_at 0
-- withdraws it), A.challenge_bits (the proof of work a join must bring, meta field), A.stock
-- (seats for sale; 0 removes it). A new rate, an announced change or a new stock is
-- published: every waiting fan's ETA (or seats left) changes with it. A.settings, the
-- settings as the operator sent them (`ShowSettings` in model/settings.rs), is laid over those
-- the show has and kept whole in META's `settings` (read by `settings()` in the prelude,
-- answered by stats.lua), and A.events, its schedule in ms (`apply_events`).
-- Answers {created, epoch}.
local m = redis.call('HMGET', META, 'epoch', 'deleted')
local created = false
local epoch = m[1]
local now = now_ms()
if not epoch or m[2] then
  epoch = A.new_epoch
  create(epoch, now)
  created = true
end
-- Whether settings let signed links through (a `link` bypass rule).
local function takes_links(st)
  for _, rule in ipairs(st.bypass or {}) do
    if rule.kind == 'link' then return true end
  end
  return false
end
if A.settings then
  local all = cjson.decode(redis.call('HGET', META, 'settings') or '{}')
  local had_links = takes_links(all)
  for name, value in pairs(A.settings) do all[name] = value end
  -- A link rule added (again): only links signed from now on go through, so that removing
  -- the rule voided the ones before for good.
  if takes_links(all) and not had_links then redis.call('HSET', META, 'links_from', now) end
  redis.call('HSET', META, 'settings', settings_text(all))
end
if A.cap then redis.call('SET', CAP, A.cap) end
if A.window_ms then redis.call('HSET', META, 'window', A.window_ms) end
if A.health_url == '' then
  redis.call('HDEL', META, 'health_url', 'pace')
elseif A.health_url then
  redis.call('HSET', META, 'health_url', A.health_url)
end
if A.floor then redis.call('HSET', META, 'floor', A.floor) end
if A.change_at == 0 then
  redis.call('HDEL', META, 'change_at', 'change_rate')
elseif A.change_at then
  redis.call('HSET', META, 'change_at', A.change_at, 'change_rate', A.change_rate)
end
if A.challenge_bits then redis.call('HSET', META, 'challenge_bits', A.challenge_bits) end
if A.stock == 0 then
  redis.call('HDEL', META, 'stock')
elseif A.stock then
  redis.call('HSET', META, 'stock', A.stock)
end
if A.stock then audit({'kind', 'stock', 'at_ms', now, 'epoch', epoch, 'stock', A.stock}) end
if A.rate then redis.call('SET', RATE, A.rate) end
-- A schedule (A.events: in ms, as `apply_events` reads it; none: removed) is applied at once,
-- and again whenever the show's own settings change under it.
if A.events then
  if #A.events > 0 then
    redis.call('HSET', META, 'events', cjson.encode(A.events))
  else
    redis.call('HDEL', META, 'events')
  end
end
local scheduled = A.events or redis.call('HEXISTS', META, 'events') == 1
if scheduled then apply_events(now, epoch, 0, false) end
if A.rate or A.change_at or A.stock or scheduled then
  local ver = redis.call('INCR', VER)
  publish('rate', epoch, ver, head(), nil, 0, now)
end
return {created = created, epoch = epoch}
