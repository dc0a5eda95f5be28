-- Shared head of every per-show script. Every key of a show carries the same hash tag, so a
-- script touches one Redis Cluster slot. The Rust side passes the keys and arguments in this
-- order to every script; a script's own arguments start at ARGV[7].
local Q, SEQ, HEAD, LEFT, VER, RATE, ADMISSIONS, FENCE, TICK, CAP =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local SHOW, DEFAULT_RATE, TTL, ADMITTED, CHANNEL, DEFAULT_CAP =
  ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6])

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function rate() return tonumber(redis.call('GET', RATE) or DEFAULT_RATE) end
-- Most fans admitted and not yet done buying at once; 0: no cap.
local function cap() return tonumber(redis.call('GET', CAP) or DEFAULT_CAP) end
-- Admissions still running that have not bought yet (the buyers in the system behind).
local function active(now) return redis.call('ZCOUNT', ADMISSIONS, '(' .. now, '+inf') end
local function head() return tonumber(redis.call('GET', HEAD) or '0') end
local function version() return tonumber(redis.call('GET', VER) or '0') end

-- One message per change, published inside the script that made it: subscribers see the
-- changes of a show in the order they happened, each with its version.
local function publish(kind, ver, hd, left, admitted, at)
  local msg = string.format(
    '{"show":"%s","version":%d,"kind":"%s","head":%d,"rate":%d,"admitted":%d,"ttl_ms":%d,"at_ms":%d',
    SHOW, ver, kind, hd, rate(), admitted, TTL, at)
  if left then msg = msg .. string.format(',"left":%d', left) end
  redis.call('PUBLISH', CHANNEL, msg .. '}')
end
