-- The proof of work a join of this show must bring now: {bits = zero bits (0: none)}.
local _, refused = live_show()
if refused then return refused end
return {bits = tonumber(redis.call('HGET', META, 'challenge_bits') or '0')}
