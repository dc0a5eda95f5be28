-- A fan ordered: it no longer counts as an active buyer, so its place goes to the next fan.
-- Its admission stays valid until the TTL, so a retried order still passes the gate.
-- ARGV[7] = ticket. Returns 1 if it was counted.
return redis.call('ZREM', ADMISSIONS, ARGV[7])
