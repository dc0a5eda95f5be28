-- What a hub needs to derive positions, read at one instant: {epoch, version, head, pace
-- (5 values), opens_at (-1: not scheduled), closed_n (-1: open pre-queue), the draw key as
-- eight 32-bit words (-1 each until drawn), left...}; epoch 0 (and nothing after the pace)
-- when the show does not exist or lost its state.
local epoch, refused = live_show()
if refused then return with_pace({0, 0, 0}) end
local hd = head()
local out = with_pace({tonumber(epoch), version(), hd})
local m = redis.call('HMGET', META, 'opens_at', 'closed_n', 'draw_key')
out[#out + 1] = tonumber(m[1] or '-1')
out[#out + 1] = tonumber(m[2] or '-1')
for i = 1, 8 do
  out[#out + 1] = m[3] and tonumber(string.sub(m[3], i * 8 - 7, i * 8), 16) or -1
end
for _, s in ipairs(redis.call('ZRANGEBYSCORE', LEFT, '(' .. hd, '+inf')) do
  out[#out + 1] = tonumber(s)
end
return out
