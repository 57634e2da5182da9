-- sendcap sliding log: decides one or more sends, each checked against every cap that applies
-- to it and, if it fits, recorded, all in one atomic call. One call carries several sends so
-- that Redis pays its per-call cost once for all of them; with Redis Cluster, the keys of one
-- call share a slot.
--
-- What it costs Redis (7.0, measured with INFO commandstats and perf) decided how it is written:
-- a redis.call() costs about 1.7 us; a ZRANGE WITHSCORES of 5 entries about 8 us, because every
-- score is printed as text and parsed back; converting a Lua number to a command argument prints
-- it too. So caps are counted with ZCOUNT over score ranges that the caller computed and passed as
-- text, scores are read only to tell a capped user when they are eligible again, and a send that
-- fits is added with ZADD NX, which also finds a replay; a refused send is checked for being a
-- replay (ZSCORE) only then, since a replay must be allowed again whatever the caps say now.
--
-- KEYS[i]  the log of the i-th send's user: a sorted set, member = 5-byte idempotency id
--          (top 3 bits: the send's channel), score = decision time in ms
-- ARGV[1]  the index in ARGV of the first send's arguments
-- ARGV     then the shapes of the call: the caps that apply to a kind of send, each
--            minInterval horizon ncaps           interval ms (0: none); horizon ms (the key
--                                                expires this long after a send is logged)
--            then per cap: kind window limit channel
--                                                kind 1 calendar period, 0 rolling window of
--                                                window ms; channel 0 counts every send, k only
--                                                those whose member's top 3 bits are k
-- ARGV     then per send: now member shape evict recent [min max]*
--                                                decision ms; idempotency id; the ARGV index of
--                                                its shape; entries scored <= evict are older than
--                                                the horizon; scores in (recent, +inf) are within
--                                                the minimum interval; each cap's score range:
--                                                (now - window, +inf) or [start, end) of a period
--
-- A logged send at t counts against a rolling window w iff t > now - w (later than now counts
-- too), against a calendar cap iff start <= t < end. Entries older than the horizon are evicted
-- when a send is logged; until then they still identify a replay.
-- Returns 4 integers per send: outcome, cap, count, nextEligibleAt, where outcome is
--   0 allowed and logged, 1 already logged (allowed again, nothing consumed),
--   2 capped by cap number `cap` (1-based, in its shape) holding `count` sends, 3 minimum interval;
--   and nextEligibleAt is the earliest time >= now at which the same send would be allowed.

local call, floor, byte, sub = redis.call, math.floor, string.byte, string.sub

-- A shape's numbers, parsed once per call, and its widest rolling cap over all channels: a
-- rolling cap over all channels with a narrower window counts no more sends than that one.
local shapes = {}
local function shape(sh)
  local v = shapes[sh]
  if v == nil then
    v = {widest = 0, widestWindow = 0}
    for i = 0, 2 + 4 * tonumber(ARGV[sh + 2]) do
      v[i + 1] = tonumber(ARGV[sh + i])
    end
    for c = 1, v[3] do
      local k = 4 * c
      if v[k] == 0 and v[k + 3] == 0 and v[k + 1] > v.widestWindow then
        v.widest, v.widestWindow = c, v[k + 1]
      end
    end
    shapes[sh] = v
  end
  return v
end

local function channelOf(member)
  return floor(byte(member, 1) / 32)
end

-- The logged sends a cap counts: every entry in its range, or those of its channel.
local function logged(key, channel, min, max)
  if channel == 0 then
    return call('ZCOUNT', key, min, max)
  end
  local n = 0
  for _, m in ipairs(call('ZRANGEBYSCORE', key, min, max)) do
    if channelOf(m) == channel then
      n = n + 1
    end
  end
  return n
end

-- The score of the k-th oldest logged send a rolling cap counts.
local function kthOldest(key, channel, min, max, k)
  if channel == 0 then
    local entries = call('ZRANGEBYSCORE', key, min, max, 'WITHSCORES', 'LIMIT', k - 1, 1)
    return tonumber(entries[2])
  end
  for _, m in ipairs(call('ZRANGEBYSCORE', key, min, max)) do
    if channelOf(m) == channel then
      k = k - 1
      if k == 0 then
        return tonumber(call('ZSCORE', key, m))
      end
    end
  end
end

-- The time of the newest logged send scored in (recent, +inf), or nil.
local function newest(key, recent)
  local entries = call('ZREVRANGEBYSCORE', key, '+inf', recent, 'WITHSCORES', 'LIMIT', 0, 1)
  return entries[2] and tonumber(entries[2])
end

local function decide(key, nowArg, member, sh, q)
  local now = tonumber(nowArg)
  local v = shape(sh)
  local failed, failedCount, nextEligible = 0, 0, now
  local widest = nil
  if v.widest > 0 then
    local wp = q + 2 * v.widest
    widest = call('ZCOUNT', key, ARGV[wp], ARGV[wp + 1])
  end
  local c0, p = 4, q + 2
  for c = 1, v[3] do
    local calendar, window, limit, channel = v[c0] == 1, v[c0 + 1], v[c0 + 2], v[c0 + 3]
    local min, max = ARGV[p], ARGV[p + 1]
    c0, p = c0 + 4, p + 2
    local n
    if c == v.widest or (widest and widest < limit and not calendar and channel == 0) then
      n = widest -- the widest cap's count, or an upper bound that already fits
    else
      n = logged(key, channel, min, max)
    end
    if n >= limit then
      if failed == 0 then
        failed, failedCount = c, n
      end
      local at
      if calendar then
        at = tonumber(sub(max, 2))
      else
        at = kthOldest(key, channel, min, max, n - limit + 1) + window
      end
      if at > nextEligible then
        nextEligible = at
      end
    end
  end
  local interval = v[1]
  local latest = interval > 0 and newest(key, ARGV[q + 1])
  if latest and latest + interval > nextEligible then
    nextEligible = latest + interval
  end
  if failed > 0 or latest then
    if call('ZSCORE', key, member) then
      return 1, 0, 0, now
    end
    if failed > 0 then
      return 2, failed, failedCount, nextEligible
    end
    return 3, 0, 0, nextEligible
  end
  if call('ZADD', key, 'NX', nowArg, member) == 0 then
    return 1, 0, 0, now
  end
  call('ZREMRANGEBYSCORE', key, '-inf', ARGV[q])
  call('PEXPIRE', key, ARGV[sh + 1])
  return 0, 0, 0, now
end

local result = {}
local a = tonumber(ARGV[1])
for i = 1, #KEYS do
  local sh = tonumber(ARGV[a + 2])
  local r = 4 * i
  result[r - 3], result[r - 2], result[r - 1], result[r] = decide(KEYS[i], ARGV[a], ARGV[a + 1], sh, a + 3)
  a = a + 5 + 2 * shape(sh)[3]
end
return result
