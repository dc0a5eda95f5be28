-- A show's own page: {doc, version} (A.file absent) or {file} (A.file, a file's hash); {} when
-- there is none. Reads only, whatever the show's phase: an ended sale shows its page too.
if A.file then
  local body = redis.call('HGET', page_key(), 'file:' .. A.file)
  if not body then return {} end
  return {file = body}
end
local v = redis.call('HMGET', page_key(), 'doc', 'version')
if not v[1] then return {} end
return {doc = v[1], version = v[2]}
