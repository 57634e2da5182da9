-- The reference the limiter benchmark compares sendcap's script with: the sliding-log check
-- published in Grab's write-up, with both caps of the benchmark (2 a day, 5 a week). The send's
-- timestamp is both its score and its member; no replay is recognised and no TTL is set.
-- KEYS[1] the user's log; ARGV[1] now in ms
local now = tonumber(ARGV[1])
local day = redis.call('ZCOUNT', KEYS[1], now - 86400000, now)
local week = redis.call('ZCOUNT', KEYS[1], now - 604800000, now)
local allowed = day < 2 and week < 5
if allowed then
  redis.call('ZADD', KEYS[1], now, now)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 604800000)
return allowed and 1 or 0
