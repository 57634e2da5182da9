-- sendcap sliding log: checks every cap of a policy for one user and, if the send fits,
-- records it, all in one atomic call.
--
-- KEYS[1]  the user's log: a sorted set, member = idempotency id of a send, score = decision ms
-- ARGV[1]  now: the decision time in ms
-- ARGV[2]  the send's idempotency id (8 bytes derived from its messageId)
-- ARGV[3]  minimum interval between two sends in ms, 0 for none
-- ARGV[4]  horizon in ms: the longest window, interval or idempotency retention; older entries
--          are evicted, and the key expires this long after its newest entry
-- ARGV[5], ARGV[6], ...  window ms and limit of each cap, in policy order
--
-- A logged send at t counts against a window w iff t > now - w (later than now counts too).
-- Returns {outcome, cap, count, nextEligibleAt}:
--   outcome 0 allowed and logged, 1 already logged (allowed again, nothing consumed),
--           2 capped by cap number `cap` (1-based) holding `count` sends, 3 minimum interval;
--   nextEligibleAt: the earliest time >= now at which the same send would be allowed.
local key = KEYS[1]
local now = tonumber(ARGV[1])
local member = ARGV[2]

if redis.call('ZSCORE', key, member) then
  return {1, 0, 0, now}
end

local horizon = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - horizon)
local log = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
local n = #log / 2
local scores = {}
for j = 1, n do
  scores[j] = tonumber(log[2 * j])
end

local failedCap, failedCount, nextEligible = 0, 0, now
for i = 5, #ARGV, 2 do
  local window = tonumber(ARGV[i])
  local limit = tonumber(ARGV[i + 1])
  local lower = now - window
  local first = n + 1
  for j = 1, n do
    if scores[j] > lower then
      first = j
      break
    end
  end
  local count = n - first + 1
  if count >= limit then
    if failedCap == 0 then
      failedCap = (i - 3) / 2
      failedCount = count
    end
    -- the (count - limit + 1)-th oldest entry in the window must leave it first
    local leaves = scores[first + count - limit] + window
    if leaves > nextEligible then
      nextEligible = leaves
    end
  end
end

local interval = tonumber(ARGV[3])
local intervalFailed = false
if interval > 0 and n > 0 and scores[n] > now - interval then
  intervalFailed = true
  if scores[n] + interval > nextEligible then
    nextEligible = scores[n] + interval
  end
end

if failedCap > 0 then
  return {2, failedCap, failedCount, nextEligible}
end
if intervalFailed then
  return {3, 0, 0, nextEligible}
end

redis.call('ZADD', key, ARGV[1], member)
local newest = now
if n > 0 and scores[n] > newest then
  newest = scores[n]
end
redis.call('PEXPIRE', key, newest - now + horizon)
return {0, 0, 0, now}
