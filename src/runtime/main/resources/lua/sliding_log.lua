-- sendcap caps: decides one or more sends, each checked against every cap that applies to it
-- and, if it fits, recorded, all in one atomic call. One call carries several sends so that Redis
-- pays its per-call cost once for all of them; with Redis Cluster, the keys of one call share a
-- slot.
--
-- What it costs Redis decided how it is written (Redis 7.0, measured with INFO commandstats,
-- perf and callgrind): each redis.call() costs about 2 us before its command does anything, so
-- one ZRANGE WITHSCORES reads everything the user's key holds and everything else is worked out
-- here from that one read: every cap's count, the minimum interval, the time the user is next
-- eligible and whether the send is a replay. A capped send costs one redis.call(), a logged one
-- three (ZRANGE, one ZADD for the send and every counter it changes, PEXPIRE) and a fourth
-- (ZREMRANGEBYRANK) only when the log holds entries older than the horizon. The price is the
-- scores: Redis 7.0 prints each one as text and Lua parses it back, about a third of the script's
-- instructions.
--
-- KEYS[i]  the i-th send's user: one sorted set holding
--            the log: member = 5-byte idempotency id (top 3 bits: the send's channel, 1 to 7, then
--                     37 bits of SHA-256(messageId)), score = decision time in ms (positive);
--            counters of the caps that are not sliding logs: member = a tag byte below 32 (so
--                     never an id) then the cap's identity (see CallBuilder), score = minus the
--                     value, so that counters sort before every log entry:
--                       1 fixed window: its bucket's start + the bucket's count
--                       2 sliding window: the same, 3 the count of the bucket before it
--                       4 token bucket: the theoretical arrival time (TAT)
--                     buckets are window-long spans from the epoch; a count stays below the
--                     window in ms (Cap checks the limit), so start + count is read back whole.
--                     Packed, a counter costs one number fewer to print (ZRANGE) and parse (ZADD).
-- ARGV[1]  the index in ARGV of the first send's arguments
-- ARGV[2]  the time floor, ms: no send decided after this call has an earlier decision time
--          (under the event clock, sends arrive out of order, so it may lie before their `now`)
-- ARGV     then the shapes of the call: the caps that apply to a kind of send, each
--            minInterval horizon ttl ncaps     interval ms (0: none); horizon ms (log entries
--                                              this far before the time floor are evicted when a
--                                              send is logged: no decision can count them);
--                                              ttl ms (the key expires this long after a send
--                                              is logged: at least the horizon, and as long as
--                                              a counter's state matters)
--            then per cap: kind window limit channel identity
--                                              kind 0 sliding log over a rolling window of window
--                                              ms, 1 sliding log over a calendar period,
--                                              2 fixed window, 3 sliding window, 4 token bucket
--                                              (window = its emission interval, ms);
--                                              channel 0 counts every send, k only those whose
--                                              member's top 3 bits are k; identity names a
--                                              counter ('' for a sliding log)
-- ARGV     then per send: now member shape [start end]*
--                                              decision ms; idempotency id; the ARGV index of
--                                              its shape, negative for a probe (only asks whether
--                                              the send is a replay); for each calendar cap of the shape,
--                                              in order, its current period [start, end)
--
-- A logged send at t counts against a rolling window w iff t > now - w (later than now counts
-- too), against a calendar cap iff start <= t < end. Entries at or before floor - horizon are
-- evicted when a send is logged; until then they still identify a replay. Counters never go back in
-- time: a send older than a counter's bucket (an out-of-order event) counts in that bucket.
-- Returns 4 integers per send: outcome, cap, count, nextEligibleAt, where outcome is
--   0 allowed and logged, 1 already logged (allowed again, nothing consumed),
--   2 capped by cap number `cap` (1-based, in its shape) holding `count` sends, 3 minimum interval,
--   4 a probe that is not a replay (nothing checked or logged);
--   and nextEligibleAt is the earliest time >= now at which the same send would be allowed.

local call, byte, char, floor, unpack = redis.call, string.byte, string.char, math.floor, unpack
local timeFloor = tonumber(ARGV[2])

-- A shape's numbers, parsed once per call.
local shapes = {}
local function shape(sh)
  local v = shapes[sh]
  if v == nil then
    v = {interval = tonumber(ARGV[sh]), horizon = tonumber(ARGV[sh + 1]), ttl = ARGV[sh + 2],
         calendars = 0}
    for c = 1, tonumber(ARGV[sh + 3]) do
      local k = sh + 4 + 5 * (c - 1)
      local kind = tonumber(ARGV[k])
      local cap = {kind = kind, window = tonumber(ARGV[k + 1]), limit = tonumber(ARGV[k + 2]),
                   channel = tonumber(ARGV[k + 3])}
      if kind == 1 then
        cap.bound = 3 + 2 * v.calendars
        v.calendars = v.calendars + 1
      elseif kind == 2 then
        cap.count = char(1) .. ARGV[k + 4]
      elseif kind == 3 then
        cap.count, cap.previous = char(2) .. ARGV[k + 4], char(3) .. ARGV[k + 4]
      elseif kind == 4 then
        cap.tat = char(4) .. ARGV[k + 4]
      end
      v[c] = cap
    end
    shapes[sh] = v
  end
  return v
end

-- The decoded log of the send being decided, the times a rolling cap counts, and the ZADD
-- arguments of the counters a logged send changes: reused.
local times, channels, inside, writes = {}, {}, {}, {}

-- A fixed window: its count and release time; queues the count's update. Returns the next
-- free index of writes.
local function fixed(cap, counters, now, w)
  local window = cap.window
  local start, count = now - now % window, 0
  local held = counters and counters[cap.count]
  if held ~= nil and held - held % window >= start then
    start = held - held % window
    count = held - start
  end
  writes[w + 1], writes[w + 2] = -(start + count + 1), cap.count
  return count, start + window, w + 2
end

-- A sliding window: the weighted count and its release time; queues the counts' update.
local function sliding(cap, counters, now, w)
  local window, limit = cap.window, cap.limit
  local start, current, previous, turned = now - now % window, 0, 0, true
  local held = counters and counters[cap.count]
  if held ~= nil then
    local heldStart = held - held % window
    if heldStart >= start then
      start, current, previous, turned =
        heldStart, held - heldStart, counters[cap.previous] or 0, false
    elseif heldStart == start - window then
      previous = held - heldStart
    end
  end
  local elapsed = now - start
  if elapsed < 0 then
    elapsed = 0
  end
  -- the previous bucket's sends weigh by the part of it the window [now - window, now] covers
  local weighted = previous * (window - elapsed) + current * window
  local at
  if weighted < limit * window then
    at = now
  elseif current < limit then
    -- later in this bucket, once previous * (window - elapsed) < (limit - current) * window
    at = start + window - floor(((limit - current) * window - 1) / previous)
  else
    -- in the next bucket, once current * (window - elapsed) < limit * window
    at = start + 2 * window - floor((limit * window - 1) / current)
  end
  writes[w + 1], writes[w + 2] = -(start + current + 1), cap.count
  if turned then
    -- (0 - previous: never a negative zero)
    writes[w + 3], writes[w + 4] = 0 - previous, cap.previous
    w = w + 2
  end
  return floor(weighted / window), at, w + 2
end

-- A token bucket (GCRA): the sends it holds and its release time; queues the TAT's update.
local function bucket(cap, counters, now, w)
  local interval = cap.window
  local tat = counters and counters[cap.tat] or now
  if tat < now then
    tat = now
  end
  writes[w + 1], writes[w + 2] = -(tat + interval), cap.tat
  -- allowed iff tat - now <= (limit - 1) * interval, i.e. it holds fewer than limit sends
  return floor((tat - now + interval - 1) / interval), tat - (cap.limit - 1) * interval, w + 2
end

local function decide(key, a, v, probe)
  local now, member = tonumber(ARGV[a]), ARGV[a + 1]
  -- (numbers as strings: Redis prints a Lua number argument as a double, %.17g, at a cost)
  local log = call('ZRANGE', key, '0', '-1', 'WITHSCORES')
  local n, counters, held = 0, nil, 0
  for i = 1, #log, 2 do
    local m = log[i]
    if m == member then
      return 1, 0, 0, now
    end
    local b = byte(m)
    if b < 32 then
      counters = counters or {}
      counters[m] = -tonumber(log[i + 1])
      held = held + 1
    else
      n = n + 1
      times[n] = tonumber(log[i + 1])
      channels[n] = floor(b / 32)
    end
  end
  if probe then
    return 4, 0, 0, now
  end
  local failed, failedCount, nextEligible, w = 0, 0, now, 0
  for c = 1, #v do
    local cap = v[c]
    local kind, channel, limit, count, at = cap.kind, cap.channel, cap.limit, 0, nil
    if kind == 0 then
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
    elseif kind == 1 then
      local start, stop = tonumber(ARGV[a + cap.bound]), tonumber(ARGV[a + cap.bound + 1])
      for i = 1, n do
        local t = times[i]
        if t >= start and t < stop and (channel == 0 or channels[i] == channel) then
          count = count + 1
        end
      end
      at = stop
    elseif kind == 2 then
      count, at, w = fixed(cap, counters, now, w)
    elseif kind == 3 then
      count, at, w = sliding(cap, counters, now, w)
    else
      count, at, w = bucket(cap, counters, now, w)
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
  local evict, stale = timeFloor - v.horizon, 0
  while stale < n and times[stale + 1] <= evict do
    stale = stale + 1
  end
  if stale > 0 then
    -- the counters sort first, then the log from its oldest entry
    call('ZREMRANGEBYRANK', key, held, held + stale - 1)
  end
  if w == 0 then
    call('ZADD', key, ARGV[a], member)
  else
    call('ZADD', key, ARGV[a], member, unpack(writes, 1, w))
  end
  call('PEXPIRE', key, v.ttl)
  return 0, 0, 0, now
end

local result = {}
local a = tonumber(ARGV[1])
for i = 1, #KEYS do
  local sh = tonumber(ARGV[a + 2])
  local v = shape(sh < 0 and -sh or sh)
  local r = 4 * i
  result[r - 3], result[r - 2], result[r - 1], result[r] = decide(KEYS[i], a, v, sh < 0)
  a = a + 3 + 2 * v.calendars
end
return result
