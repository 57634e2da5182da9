-- sendcap sliding log: decides one or more sends, each checked against every cap that applies
-- to it and, if it fits, recorded, all in one atomic call. One call carries several sends so
-- that Redis pays its per-call cost once for all of them; with Redis Cluster, the keys of one
-- call share a slot.
--
-- What it costs Redis decided how it is written (Redis 7.0, measured with INFO commandstats,
-- perf and callgrind): each redis.call() costs about 2 us before its command does anything, so
-- one ZRANGE WITHSCORES reads the user's whole small log and everything else is worked out here
-- from that one read: every cap's count, the minimum interval, the time the user is next eligible
-- and whether the send is a replay. A capped send costs one redis.call(), a logged one three
-- (ZRANGE, ZADD, PEXPIRE) and a fourth (ZREMRANGEBYRANK) only when the log holds entries older
-- than the horizon. The price is the scores: Redis 7.0 prints each one as text and Lua parses it
-- back, about a third of the script's instructions.
--
-- KEYS[i]  the log of the i-th send's user: a sorted set, member = 5-byte idempotency id
--          (top 3 bits: the send's channel, then 37 bits of SHA-256(messageId)),
--          score = decision time in ms
-- ARGV[1]  the index in ARGV of the first send's arguments
-- ARGV     then the shapes of the call: the caps that apply to a kind of send, each
--            minInterval horizon ncaps           interval ms (0: none); horizon ms (entries this
--                                                old are evicted and the key expires this long
--                                                after a send is logged)
--            then per cap: kind window limit channel
--                                                kind 1 calendar period, 0 rolling window of
--                                                window ms; channel 0 counts every send, k only
--                                                those whose member's top 3 bits are k
-- ARGV     then per send: now member shape [start end]*
--                                                decision ms; idempotency id; the ARGV index of
--                                                its shape; for each calendar cap of the shape,
--                                                in order, its current period [start, end)
--
-- A logged send at t counts against a rolling window w iff t > now - w (later than now counts
-- too), against a calendar cap iff start <= t < end. Entries older than the horizon are evicted
-- when a send is logged; until then they still identify a replay.
-- Returns 4 integers per send: outcome, cap, count, nextEligibleAt, where outcome is
--   0 allowed and logged, 1 already logged (allowed again, nothing consumed),
--   2 capped by cap number `cap` (1-based, in its shape) holding `count` sends, 3 minimum interval;
--   and nextEligibleAt is the earliest time >= now at which the same send would be allowed.

local call, byte, floor = redis.call, string.byte, math.floor

-- A shape's numbers, parsed once per call.
local shapes = {}
local function shape(sh)
  local v = shapes[sh]
  if v == nil then
    v = {interval = tonumber(ARGV[sh]), horizon = tonumber(ARGV[sh + 1]),
         horizonArg = ARGV[sh + 1], calendars = 0}
    for c = 1, tonumber(ARGV[sh + 2]) do
      local k = sh + 3 + 4 * (c - 1)
      local cap = {calendar = ARGV[k] == '1', window = tonumber(ARGV[k + 1]),
                   limit = tonumber(ARGV[k + 2]), channel = tonumber(ARGV[k + 3])}
      if cap.calendar then
        cap.bound = 3 + 2 * v.calendars
        v.calendars = v.calendars + 1
      end
      v[c] = cap
    end
    shapes[sh] = v
  end
  return v
end

-- The decoded log of the send being decided, and the times a rolling cap counts: reused.
local times, channels, inside = {}, {}, {}

local function decide(key, a, v)
  local now, member = tonumber(ARGV[a]), ARGV[a + 1]
  local log = call('ZRANGE', key, 0, -1, 'WITHSCORES')
  local n = #log / 2
  for i = 1, n do
    local m = log[2 * i - 1]
    if m == member then
      return 1, 0, 0, now
    end
    times[i] = tonumber(log[2 * i])
    channels[i] = floor(byte(m) / 32)
  end
  local failed, failedCount, nextEligible = 0, 0, now
  for c = 1, #v do
    local cap = v[c]
    local channel, limit, count, at = cap.channel, cap.limit, 0, nil
    if cap.calendar then
      local start, stop = tonumber(ARGV[a + cap.bound]), tonumber(ARGV[a + cap.bound + 1])
      for i = 1, n do
        local t = times[i]
        if t >= start and t < stop and (channel == 0 or channels[i] == channel) then
          count = count + 1
        end
      end
      at = stop
    else
      local window = cap.window
      local after = now - window
      for i = 1, n do
        local t = times[i]
        if t > after and (channel == 0 or channels[i] == channel) then
          count = count + 1
          inside[count] = t
        end
      end
      -- the oldest counted sends leave the window one by one: one more fits when the
      -- (count - limit + 1)-th oldest has left
      if count >= limit then
        at = inside[count - limit + 1] + window
      end
    end
    if count >= limit then
      if failed == 0 then
        failed, failedCount = c, count
      end
      if at > nextEligible then
        nextEligible = at
      end
    end
  end
  local tooSoon = false
  if v.interval > 0 and n > 0 and times[n] > now - v.interval then
    tooSoon = true
    if times[n] + v.interval > nextEligible then
      nextEligible = times[n] + v.interval
    end
  end
  if failed > 0 then
    return 2, failed, failedCount, nextEligible
  end
  if tooSoon then
    return 3, 0, 0, nextEligible
  end
  local evict, stale = now - v.horizon, 0
  while stale < n and times[stale + 1] <= evict do
    stale = stale + 1
  end
  if stale > 0 then
    call('ZREMRANGEBYRANK', key, 0, stale - 1)
  end
  call('ZADD', key, ARGV[a], member)
  call('PEXPIRE', key, v.horizonArg)
  return 0, 0, 0, now
end

local result = {}
local a = tonumber(ARGV[1])
for i = 1, #KEYS do
  local v = shape(tonumber(ARGV[a + 2]))
  local r = 4 * i
  result[r - 3], result[r - 2], result[r - 1], result[r] = decide(KEYS[i], a, v)
  a = a + 3 + 2 * v.calendars
end
return result
