-- The pass keys instances share when PASS_KEYS is unset. KEYS[1]: a sorted set of
-- `kid:base64secret`, scored by when each was made (ms). ARGV: the key this instance signs
-- with (put back when the set is empty: the store forgot it), a fresh key (added when the
-- newest is older than the rotation period), the rotation period, how long a key superseded
-- still verifies (its passes and challenges live that long), and the settle time (every
-- instance reads the set that often, so a new key signs only once all can verify it).
-- Answers, as JSON, {keys}: the signing one first, the rest newest first.
local set = KEYS[1]
local ours, fresh = ARGV[1], ARGV[2]
local rotate, keep, settle = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local newest = redis.call('ZREVRANGE', set, 0, 0, 'WITHSCORES')
if not newest[1] then
  redis.call('ZADD', set, now, ours)
elseif now - tonumber(newest[2]) >= rotate then
  redis.call('ZADD', set, now, fresh)
end
-- Oldest first: a key goes once its successor has signed for longer than it still verifies.
local all = redis.call('ZRANGE', set, 0, -1, 'WITHSCORES')
local kept = {}
for i = 1, #all, 2 do
  local successor = all[i + 3]
  if successor and now - tonumber(successor) > settle + keep then
    redis.call('ZREM', set, all[i])
  else
    kept[#kept + 1] = {all[i], tonumber(all[i + 1])}
  end
end
-- The signing key: the newest that every instance has had time to read, else the oldest.
local signer = 1
for i = #kept, 1, -1 do
  if now - kept[i][2] >= settle then signer = i; break end
end
local out = {kept[signer][1]}
for i = #kept, 1, -1 do
  if i ~= signer then out[#out + 1] = kept[i][1] end
end
return cjson.encode({keys = out})
