-- Sets (A.doc given) or removes (A.doc absent) a show's own page, kept in `page_key()`: `doc`, its
-- `version` (which meta.lua answers, so instances know when what they hold is stale) and each
-- file as `file:<hash>` (base64). Answers {had} (whether it had a page) or a refusal.
local _, refused = live_show()
if refused then return refused end
local had = redis.call('EXISTS', page_key()) == 1
redis.call('DEL', page_key())
if A.doc then
  redis.call('HSET', page_key(), 'doc', A.doc, 'version', A.version)
  for _, f in ipairs(A.files) do
    redis.call('HSET', page_key(), 'file:' .. f.hash, f.body)
  end
end
return {had = had}
