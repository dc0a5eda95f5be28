-- Schedules a show's opening (A.opens_at, ms since the epoch), names the beacon its draw will
-- take in (A.beacon), or gives that beacon's value (A.beacon_value); each optional. The first
-- schedule keeps the secret seed (A.seed) and publishes its commitment (A.commitment); a
-- schedule only moves before the pre-queue closes. Hubs re-read the show (kind 'draw').
-- Returns {0}, {-409, why} (1 the pre-queue closed, 2 open already, 3 fans joined already, 4
-- not scheduled, 5 a beacon named after closing, 6 a beacon value out of turn), or
-- {-404}/{-503}.
local epoch, refused = live_show()
if refused then return refused end
local m = redis.call('HMGET', META, 'opens_at', 'closed_n', 'draw_key', 'beacon')
local scheduled, closed, drawn, beacon = m[1], m[2], m[3], m[4]
if A.opens_at then
  if closed then return {-409, 1} end
  if not scheduled and is_open() then return {-409, 2} end
  if not scheduled and tonumber(redis.call('GET', SEQ) or '0') > 0 then return {-409, 3} end
elseif not scheduled then
  return {-409, 4}
end
if A.beacon and closed then return {-409, 5} end
if A.beacon_value and (not (A.beacon or beacon) or not closed or drawn) then
  return {-409, 6}
end
if A.opens_at then
  if not scheduled then
    redis.call('HSET', META, 'seed', A.seed, 'commitment', A.commitment)
  end
  redis.call('HSET', META, 'opens_at', A.opens_at)
end
if A.beacon then redis.call('HSET', META, 'beacon', A.beacon) end
if A.beacon_value then redis.call('HSET', META, 'beacon_value', A.beacon_value) end
publish('draw', epoch, redis.call('INCR', VER), head(), nil, 0, now_ms())
return {0}
