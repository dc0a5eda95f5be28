-- Gives the admitter lease up, only if ARGV[1] holds it. Answers, as JSON, {released}.
local holder = redis.call('GET', KEYS[1])
if holder and string.match(holder, '^(.*)|%d+$') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return cjson.encode({released = true})
end
return cjson.encode({released = false})
