-- Schedules a show's opening (A.opens_at, ms since the epoch), names the beacon its draw will
-- take in (A.beacon), or gives that beacon's value (A.beacon_value); each optional. The first
-- schedule keeps the secret seed (A.seed) and publishes its commitment (A.commitment); a
-- schedule only moves before the pre-queue closes. Hubs re-read the show (kind 'draw').
-- Answers the outcome `scheduled`, or `conflict` with `why` (`Refused` in store/draw/mod.rs):
-- closed (the pre-queue), open (already), joined (fans, already), not_scheduled, beacon_late
-- (a beacon named after closing), beacon_value (a beacon value out of turn).
local epoch, refused = live_show()
if refused then return refused end
local m = redis.call('HMGET', META, 'opens_at', 'closed_n', 'draw_key', 'beacon')
local scheduled, closed, drawn, beacon = m[1], m[2], m[3], m[4]
if A.opens_at then
  if closed then return {outcome = 'conflict', why = 'closed'} end
  if not scheduled and is_open() then return {outcome = 'conflict', why = 'open'} end
  if not scheduled and tonumber(redis.call('GET', SEQ) or '0') > 0 then
    return {outcome = 'conflict', why = 'joined'}
  end
elseif not scheduled then
  return {outcome = 'conflict', why = 'not_scheduled'}
end
if A.beacon and closed then return {outcome = 'conflict', why = 'beacon_late'} end
if A.beacon_value and (not (A.beacon or beacon) or not closed or drawn) then
  return {outcome = 'conflict', why = 'beacon_value'}
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
return {outcome = 'scheduled'}
