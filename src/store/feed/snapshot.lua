-- What a hub needs to derive positions, read at one instant: {epoch, version, head, pace,
-- opens_at (absent: not scheduled), closed_n (absent: an open pre-queue), draw_key (absent
-- until drawn), left (the early leavers ahead of nobody yet), parked (the fans passed over while away, who
-- stand ahead of every queued one)}; epoch '0' (and nothing but the
-- pace) when the show does not exist or lost its state.
local epoch, refused = live_show()
if refused then return {epoch = '0', version = 0, head = 0, pace = pace_reply()} end
local hd = head()
local m = redis.call('HMGET', META, 'opens_at', 'closed_n', 'draw_key')
local left = {}
for _, s in ipairs(redis.call('ZRANGEBYSCORE', LEFT, '(' .. hd, '+inf')) do
  left[#left + 1] = tonumber(s)
end
return {
  epoch = epoch, version = version(), head = hd, pace = pace_reply(), parked = parked_count(),
  opens_at = tonumber(m[1] or ''), closed_n = tonumber(m[2] or ''), draw_key = m[3] or nil,
  -- cjson answers an empty table as {}: the Rust side reads that as no leavers.
  left = left,
}
