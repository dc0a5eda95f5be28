-- Mends a show after a failover lost writes (`loss_witness.rs` noticed; `lineage.rs` asks):
-- A.epoch, the show's epoch the witness saw; A.high, the highest arrival number it saw handed
-- out; A.tickets, the tickets it handed out lately. Nothing is mended when the show was
-- re-opened or deleted meanwhile ({stale = true}). Otherwise the arrival counter is raised to
-- A.high when it fell below it (the loss audited, and MENDED counts the mends and keeps the
-- lowest counter found), and each of A.tickets that is neither waiting, nor admitted, nor
-- spent (an order or a redemption took it on purpose) lost its place: it goes into LOSTFANS,
-- which `status.lua` answers `lost` for. MENDED and LOSTFANS live a day after the last mend,
-- as a join's `Idempotency-Key` does.
-- Answers {found (the counter as found), raised, lost (the tickets marked)}.
local KEEP_MS = 86400000
local m = redis.call('HMGET', META, 'epoch', 'deleted')
if m[1] ~= A.epoch or m[2] then return {stale = true} end
local found = tonumber(redis.call('GET', SEQ) or '0')
local raised = false
if found < A.high then
  redis.call('SET', SEQ, A.high)
  raised = true
  audit({'kind', 'lost', 'at_ms', now_ms(), 'epoch', A.epoch, 'arrival', A.high, 'found', found})
  local from = tonumber(redis.call('HGET', MENDED, 'from') or '')
  if not from or found < from then redis.call('HSET', MENDED, 'from', found) end
  redis.call('HINCRBY', MENDED, 'n', 1)
  redis.call('PEXPIRE', MENDED, KEEP_MS)
end
local lost = {}
for _, ticket in ipairs(A.tickets or {}) do
  if not redis.call('ZSCORE', Q, ticket)
    and redis.call('EXISTS', ADMITTED .. ticket) == 0
    and redis.call('HEXISTS', SPENT, ticket) == 0 then
    redis.call('SADD', LOSTFANS, ticket)
    lost[#lost + 1] = ticket
  end
end
if #lost > 0 then redis.call('PEXPIRE', LOSTFANS, KEEP_MS) end
return {found = found, raised = raised, lost = lost}
