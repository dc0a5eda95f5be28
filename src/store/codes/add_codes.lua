-- Adds access codes to a show (docs/lanes.md): A.codes, each {hash, lane, uses}, kept in
-- CODES as hash → `lane|uses left`, at most A.most in all. A code the show holds already is
-- kept as it is (the uses it spent stay spent: a file sent twice changes nothing), or, with
-- A.replace, set anew; CODESTAT counts each lane's codes (`codes:<lane>`) and their uses left
-- (`uses:<lane>`), which a join's spent use lowers. Answers {added, held}, or the outcome
-- `too_many` (nothing added) with how many the show holds. `held` counts the codes it held
-- already (kept, or set anew).
local _, refused = live_show()
if refused then return refused end
local held = redis.call('HLEN', CODES)
local added, held_already = 0, 0
local seen = {}
local old = {}
if #A.codes > 0 then
  local hashes = {}
  for i, c in ipairs(A.codes) do hashes[i] = c.hash end
  old = redis.call('HMGET', CODES, unpack(hashes))
end
for i, c in ipairs(A.codes) do
  if old[i] or seen[c.hash] then held_already = held_already + 1 else added = added + 1 end
  seen[c.hash] = true
end
if held + added > A.most then return {outcome = 'too_many', held = held} end
for _, c in ipairs(A.codes) do
  -- Read again, so that a code twice in one call counts once, as its later self.
  local was = redis.call('HGET', CODES, c.hash)
  if was and A.replace then
    local lane, uses = string.match(was, '^([^|]+)|(%d+)$')
    if lane then
      redis.call('HINCRBY', CODESTAT, 'codes:' .. lane, -1)
      redis.call('HINCRBY', CODESTAT, 'uses:' .. lane, -tonumber(uses))
    end
  end
  if not was or A.replace then
    redis.call('HSET', CODES, c.hash, c.lane .. '|' .. c.uses)
    redis.call('HINCRBY', CODESTAT, 'codes:' .. c.lane, 1)
    redis.call('HINCRBY', CODESTAT, 'uses:' .. c.lane, c.uses)
  end
end
return {outcome = 'added', added = added, held = held_already}
