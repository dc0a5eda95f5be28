-- What a hub needs to derive positions, read at one instant: {epoch, version, head, pace
-- (5 values), left...}; epoch 0 when the show does not exist or lost its state.
local epoch, refused = live_show()
if refused then return with_pace({0, 0, 0}) end
local hd = head()
local out = with_pace({tonumber(epoch), version(), hd})
for _, s in ipairs(redis.call('ZRANGEBYSCORE', LEFT, '(' .. hd, '+inf')) do
  out[#out + 1] = tonumber(s)
end
return out
