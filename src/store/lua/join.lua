-- Join: the next arrival sequence and the enqueue in one step, so sequences stay dense.
-- A.ticket: the ticket. With A.idem_key (the client's Idempotency-Key, as a key of this
-- show): the outcome `replayed` while the ticket kept under it lives in this epoch (the
-- caller answers that one), else the new ticket is kept under it for a day. Answers the
-- outcome `joined` with where the ticket stands, the version, epoch and pace; `replayed`; a
-- proof refused (below); or `{refused = 'ended'}` once the on-sale ended.
local epoch, refused = live_show()
if refused then return refused end
if phase() == 4 then return {refused = 'ended'} end
if A.idem_key then
  local kept = redis.call('GET', A.idem_key)
  if kept then
    local e, t = string.match(kept, '^(%d+)|(.*)$')
    if e == epoch and (redis.call('ZSCORE', Q, t) or admitted(t, epoch)) then
      return {outcome = 'replayed'}
    end
  end
end
-- Proof of work: the show's difficulty (meta `challenge_bits`) against A.proof_bits, the zero
-- bits the caller found in SHA-256(challenge:nonce) after checking the challenge's signature,
-- show and expiry; the challenge is spent here (A.proof_key, kept while it could still be
-- used, A.proof_ttl_ms), so a valid proof costs no extra call and a reused one is refused
-- atomically. The outcome `proof_required` (none brought) or `proof_too_weak`, each with the
-- `bits` needed, or `proof_spent` (used before).
local need = tonumber(redis.call('HGET', META, 'challenge_bits') or '0')
if need > 0 then
  if not A.proof_key then return {outcome = 'proof_required', bits = need} end
  if A.proof_bits < need then return {outcome = 'proof_too_weak', bits = need} end
  if not redis.call('SET', A.proof_key, '1', 'NX', 'PX', A.proof_ttl_ms) then
    return {outcome = 'proof_spent'}
  end
end
if A.idem_key then
  redis.call('SET', A.idem_key, epoch .. '|' .. A.ticket, 'PX', 86400000)
end
local seq = redis.call('INCR', SEQ)
redis.call('ZADD', Q, seq, A.ticket)
return {outcome = 'joined', ticket = standing(A.ticket, seq), version = version(), epoch = epoch,
  pace = pace_reply()}
