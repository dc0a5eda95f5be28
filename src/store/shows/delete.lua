-- Removes a show and its state, leaving a tombstone (A.tombstone_ms = its lifetime in ms) so that
-- no instance takes the vanished state for a loss. Fans following it are told it is gone.
-- Answers {deleted}: whether there was a show.
local m = redis.call('HMGET', META, 'epoch', 'deleted')
if not m[1] or m[2] then return {deleted = false} end
redis.call('DEL', unpack(state_keys()))
redis.call('DEL', META)
-- Its access codes and its own page go with it.
redis.call('DEL', CODES, CODESTAT, page_key())
redis.call('HSET', META, 'deleted', '1')
redis.call('PEXPIRE', META, A.tombstone_ms)
publish('reset', 0, 0, 0, nil, 0, now_ms())
return {deleted = true}
