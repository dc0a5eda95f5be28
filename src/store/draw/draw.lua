-- Draws the closed pre-queue under A.key (64 hex digits, worked out by the admitter from the
-- seed, the participants digest A.digest and the beacon's value) and opens the show: once, and
-- fenced like an admission. Nothing in the queue moves: admission walks the drawn places
-- through the permutation. The pre-queue's early leavers, kept by arrival until now, are kept
-- by drawn place from now. Answers {drawn}: false when not (fenced, not closed, drawn already,
-- deleted, lost or ended).
local m = redis.call('HMGET', META, 'epoch', 'lost', 'deleted', 'closed_n', 'draw_key', 'phase')
if not m[1] or m[2] == '1' or m[3] or not m[4] or m[5] or m[6] == 'ended' then return {drawn = false} end
local token = tonumber(A.fence)
if token < tonumber(redis.call('GET', FENCE) or '0') then return {drawn = false} end
local n = tonumber(m[4])
local now = now_ms()
local p = permutation(A.key, n)
local leavers = redis.call('ZRANGEBYSCORE', LEFT, '-inf', n)
redis.call('ZREMRANGEBYSCORE', LEFT, '-inf', n)
for _, a in ipairs(leavers) do
  local k = drawn_place(p, tonumber(a))
  redis.call('ZADD', LEFT, k, k)
end
redis.call('HSET', META, 'draw_key', A.key, 'digest', A.digest, 'drawn_at', now, 'open', '1')
audit({'kind', 'draw', 'at_ms', now, 'fence', token, 'epoch', m[1], 'participants', n,
  'participants_digest', A.digest})
-- The first ETAs after the draw skip the fans already away (they are passed over).
local grace, hold = away_rules(settings())
away_figures(now, grace, hold)
publish('draw', m[1], redis.call('INCR', VER), head(), nil, 0, now)
return {drawn = true}
