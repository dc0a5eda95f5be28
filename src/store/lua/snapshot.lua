-- What a hub needs to derive positions, read at one instant: {epoch, version, head, rate,
-- left...}; epoch 0 when the show does not exist or lost its state.
local epoch, refused = live_show()
if refused then return {0, 0, 0, rate()} end
local hd = head()
local out = {tonumber(epoch), version(), hd, rate()}
for _, s in ipairs(redis.call('ZRANGEBYSCORE', LEFT, '(' .. hd, '+inf')) do
  out[#out + 1] = tonumber(s)
end
return out
