-- What a hub needs to derive positions, read at one instant: {version, head, rate, left...}.
local hd = head()
local out = {version(), hd, rate()}
for _, s in ipairs(redis.call('ZRANGEBYSCORE', LEFT, '(' .. hd, '+inf')) do
  out[#out + 1] = tonumber(s)
end
return out
