-- sendcap sliding log: decides one or more sends, each checked against every cap that applies
-- to it and, if it fits, recorded, all in one atomic call. One call carries several sends so
-- that Redis pays its per-call cost once for all of them; with Redis Cluster, the keys of one
-- call share a slot.
--
-- KEYS[i]  the log of the i-th send's user: a sorted set, member = 5-byte idempotency id
--          (top 3 bits: the send's channel), score = decision time in ms
-- ARGV     the shapes of the call, then one group of arguments per send:
--   P                                         number of shapes
--   per shape: minInterval horizon ncaps      interval ms (0: none); horizon ms (entries older
--                                             are evicted, the key expires this long after its
--                                             newest entry); number of caps
--     per cap: kind window limit channel      kind 0 rolling (window ms), 1 calendar period;
--                                             channel 0 counts every send, k only those whose
--                                             member's top 3 bits are k
--   per send: now member shape [start end]*   decision ms, idempotency id, shape number,
--                                             then the period [start, end) of each calendar cap
--
-- A logged send at t counts against a rolling window w iff t > now - w (later than now counts
-- too), against a calendar cap iff start <= t < end.
-- Returns 4 integers per send: outcome, cap, count, nextEligibleAt, where outcome is
--   0 allowed and logged, 1 already logged (allowed again, nothing consumed),
--   2 capped by cap number `cap` (1-based, in its shape) holding `count` sends, 3 minimum interval;
--   and nextEligibleAt is the earliest time >= now at which the same send would be allowed.

local shapes = {}
local a = 2
for s = 1, tonumber(ARGV[1]) do
  local shape = {interval = tonumber(ARGV[a]), horizon = tonumber(ARGV[a + 1]), caps = {}}
  local ncaps = tonumber(ARGV[a + 2])
  a = a + 3
  for c = 1, ncaps do
    shape.caps[c] = {
      calendar = ARGV[a] == '1',
      window = tonumber(ARGV[a + 1]),
      limit = tonumber(ARGV[a + 2]),
      channel = tonumber(ARGV[a + 3])
    }
    a = a + 4
  end
  shapes[s] = shape
end

local function matches(member, channel)
  return channel == 0 or math.floor(string.byte(member, 1) / 32) == channel
end

-- Counts the entries of the log (from index `first`) that one cap sees, and when enough of
-- them leave it for one more send to fit; returns count, release time.
local function check(cap, log, first, n, now, start, stop)
  local count, times = 0, {}
  for j = first, n do
    local t = tonumber(log[2 * j])
    local inside
    if cap.calendar then
      inside = t >= start and t < stop
    else
      inside = t > now - cap.window
    end
    if inside and matches(log[2 * j - 1], cap.channel) then
      count = count + 1
      times[count] = t
    end
  end
  if count < cap.limit then
    return count, nil
  end
  if cap.calendar then
    return count, stop
  end
  -- the (count - limit + 1)-th oldest entry inside the window must leave it first
  return count, times[count - cap.limit + 1] + cap.window
end

local function decide(key, now, member, shape, periods)
  local log = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  local n = #log / 2
  for j = 1, n do
    if log[2 * j - 1] == member then
      return 1, 0, 0, now
    end
  end
  local evict = 0
  while evict < n and tonumber(log[2 * evict + 2]) <= now - shape.horizon do
    evict = evict + 1
  end
  if evict > 0 then
    redis.call('ZREMRANGEBYRANK', key, 0, evict - 1)
  end
  local failed, failedCount, nextEligible = 0, 0, now
  local p = 1
  for c, cap in ipairs(shape.caps) do
    local start, stop = 0, 0
    if cap.calendar then
      start, stop = periods[p], periods[p + 1]
      p = p + 2
    end
    local count, release = check(cap, log, evict + 1, n, now, start, stop)
    if release then
      if failed == 0 then
        failed, failedCount = c, count
      end
      if release > nextEligible then
        nextEligible = release
      end
    end
  end
  local newest = n > evict and tonumber(log[2 * n]) or nil
  local tooSoon = shape.interval > 0 and newest and newest > now - shape.interval
  if tooSoon and newest + shape.interval > nextEligible then
    nextEligible = newest + shape.interval
  end
  if failed > 0 then
    return 2, failed, failedCount, nextEligible
  end
  if tooSoon then
    return 3, 0, 0, nextEligible
  end
  redis.call('ZADD', key, now, member)
  if newest == nil or newest < now then
    newest = now
  end
  redis.call('PEXPIRE', key, newest - now + shape.horizon)
  return 0, 0, 0, now
end

local result = {}
for i = 1, #KEYS do
  local now = tonumber(ARGV[a])
  local shape = shapes[tonumber(ARGV[a + 2])]
  local periods = {}
  local k = 0
  for _, cap in ipairs(shape.caps) do
    if cap.calendar then
      periods[k + 1] = tonumber(ARGV[a + 3 + k])
      periods[k + 2] = tonumber(ARGV[a + 4 + k])
      k = k + 2
    end
  end
  local outcome, cap, count, nextEligible = decide(KEYS[i], now, ARGV[a + 1], shape, periods)
  local r = #result
  result[r + 1], result[r + 2], result[r + 3], result[r + 4] = outcome, cap, count, nextEligible
  a = a + 3 + k
end
return result
