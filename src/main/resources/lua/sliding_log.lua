-- sendcap sliding log: decides one or more sends, each checked against every cap that applies
-- to it and, if it fits, recorded, all in one atomic call. One call carries several sends so
-- that Redis pays its per-call cost once for all of them; with Redis Cluster, the keys of one
-- call share a slot. The script builds no Lua tables but its reply: in Redis, each table costs
-- more than the commands it saves.
--
-- KEYS[i]  the log of the i-th send's user: a sorted set, member = 5-byte idempotency id
--          (top 3 bits: the send's channel), score = decision time in ms
-- ARGV[1]  the index in ARGV of the first send's arguments
-- ARGV     then the shapes of the call: the caps that apply to a kind of send, each
--            minInterval horizon ncaps ncalendar  interval ms (0: none); horizon ms (entries
--                                                 older are evicted, the key expires this long
--                                                 after its newest entry); caps; calendar caps
--            then per cap: kind window limit channel
--                                                 kind 1 calendar period, 0 rolling of window ms;
--                                                 channel 0 counts every send, k only those whose
--                                                 member's top 3 bits are k
-- ARGV     then per send: now member shape [start end]*
--                                                 decision ms, idempotency id, the ARGV index of
--                                                 its shape, the period [start, end) of each of
--                                                 its calendar caps
--
-- A logged send at t counts against a rolling window w iff t > now - w (later than now counts
-- too), against a calendar cap iff start <= t < end.
-- Returns 4 integers per send: outcome, cap, count, nextEligibleAt, where outcome is
--   0 allowed and logged, 1 already logged (allowed again, nothing consumed),
--   2 capped by cap number `cap` (1-based, in its shape) holding `count` sends, 3 minimum interval;
--   and nextEligibleAt is the earliest time >= now at which the same send would be allowed.

local floor, byte = math.floor, string.byte

-- Whether the entry at position j of the log counts against a cap.
local function counts(log, j, calendar, window, channel, now, lo, hi)
  local t = tonumber(log[2 * j])
  if calendar then
    if t < lo or t >= hi then
      return false
    end
  elseif t <= now - window then
    return false
  end
  return channel == 0 or floor(byte(log[2 * j - 1], 1) / 32) == channel
end

-- When enough of a full rolling cap's entries have left it for one more send to fit: the time
-- the (count - limit + 1)-th oldest entry it counts leaves the window.
local function release(log, first, n, window, channel, now, k)
  for j = first, n do
    if counts(log, j, false, window, channel, now) then
      k = k - 1
      if k == 0 then
        return tonumber(log[2 * j]) + window
      end
    end
  end
end

local function decide(key, now, member, sh, p)
  local log = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  local n = #log / 2
  for j = 1, n do
    if log[2 * j - 1] == member then
      return 1, 0, 0, now
    end
  end
  local horizon = tonumber(ARGV[sh + 1])
  local first = 1
  while first <= n and tonumber(log[2 * first]) <= now - horizon do
    first = first + 1
  end
  if first > 1 then
    redis.call('ZREMRANGEBYRANK', key, 0, first - 2)
  end
  local failed, failedCount, nextEligible = 0, 0, now
  local c0 = sh + 4
  for c = 1, tonumber(ARGV[sh + 2]) do
    local calendar = ARGV[c0] == '1'
    local window, limit, channel = tonumber(ARGV[c0 + 1]), tonumber(ARGV[c0 + 2]), tonumber(ARGV[c0 + 3])
    c0 = c0 + 4
    local lo, hi
    if calendar then
      lo, hi = tonumber(ARGV[p]), tonumber(ARGV[p + 1])
      p = p + 2
    end
    local count = 0
    for j = first, n do
      if counts(log, j, calendar, window, channel, now, lo, hi) then
        count = count + 1
      end
    end
    if count >= limit then
      if failed == 0 then
        failed, failedCount = c, count
      end
      local at = hi
      if not calendar then
        at = release(log, first, n, window, channel, now, count - limit + 1)
      end
      if at > nextEligible then
        nextEligible = at
      end
    end
  end
  local newest = n >= first and tonumber(log[2 * n]) or nil
  local interval = tonumber(ARGV[sh])
  local tooSoon = interval > 0 and newest and newest > now - interval
  if tooSoon and newest + interval > nextEligible then
    nextEligible = newest + interval
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
  redis.call('PEXPIRE', key, newest - now + horizon)
  return 0, 0, 0, now
end

local result = {}
local a = tonumber(ARGV[1])
for i = 1, #KEYS do
  local now, sh = tonumber(ARGV[a]), tonumber(ARGV[a + 2])
  local r = 4 * i
  result[r - 3], result[r - 2], result[r - 1], result[r] = decide(KEYS[i], now, ARGV[a + 1], sh, a + 3)
  a = a + 3 + 2 * tonumber(ARGV[sh + 3])
end
return result
