-- sendcap caps: decides one or more sends, each checked against every cap that applies to it
-- and, if it fits, recorded, all in one atomic call. One call carries several sends so that Redis
-- pays its per-call cost once for all of them; with Redis Cluster, the keys of one call share a
-- slot.
--
-- What it costs Redis decided how it is written (Redis 7.0, measured with INFO cpu around
-- redis-benchmark runs and loops inside one script, and perf): one read of the user's key gives
-- everything else, worked out here: every cap's count, the minimum interval, the time the user
-- is next eligible and whether the send is a replay. A capped send costs one redis.call(), a
-- logged one three (the read, one ZADD for the send and every counter it changes, PEXPIRE) and a
-- fourth (ZREMRANGEBYRANK) only when the log holds entries older than the horizon. The read is a
-- ZSCAN, not a ZRANGE WITHSCORES, which prints each score as a double (see decide); the reply is
-- one string of bytes, not a list of numbers, each of which Redis would turn into RESP; and
-- `x + 0` converts a numeric argument as tonumber(x) would, at half its cost (no function call).
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
-- ARGV[1]  the time floor, ms: no send decided after this call has an earlier decision time
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
-- ARGV     last, the sends, one after the other in one string (one argument per send would cost
--          Redis an argument object and a Lua string each, and a number's conversion):
--            shape now member [start end]*  big-endian: shape, 2 bytes, the ARGV index of the
--                                              send's shape, negative for a probe (only asks
--                                              whether the send is a replay); now, the decision
--                                              ms as a length byte and decimal digits (the score
--                                              ZADD is given); member, the 5-byte idempotency id;
--                                              for each calendar cap of the shape, in order, its
--                                              current period [start, end), 8 bytes each
--
-- A logged send at t counts against a rolling window w iff t > now - w (later than now counts
-- too), against a calendar cap iff start <= t < end. Entries at or before floor - horizon are
-- evicted when a send is logged; until then they still identify a replay. Counters never go back in
-- time: a send older than a counter's bucket (an out-of-order event) counts in that bucket.
-- Returns one string: per send, in order, an outcome byte
--   0 allowed and logged, 1 already logged (allowed again, nothing consumed),
--   4 a probe that is not a replay (nothing checked or logged): nothing follows it;
--   2 capped: then the cap's number (1-based, in its shape; 2 bytes), the sends it holds (4 bytes)
--     and nextEligibleAt (8 bytes);
--   3 minimum interval: then nextEligibleAt (8 bytes);
--   5 the user's key could not be read (WRONGTYPE: something else wrote it; or an ACL refusing
--     it): then the length of Redis's error (1 byte) and the error, which the client classifies;
--     nothing was checked or logged for that send, and the call's other sends are decided;
-- numbers unsigned but nextEligibleAt, big-endian; nextEligibleAt is the earliest time >= now
-- (ms) at which the same send would be allowed.

local call, tryCall, byte, char, floor, huge, unpack, sunpack, rep, sub =
  redis.call, redis.pcall, string.byte, string.char, math.floor, math.huge, unpack, struct.unpack,
  string.rep, string.sub
local timeFloor = ARGV[1] + 0

-- The shapes of the call by ARGV index, each parsed at its first send.
local shapes = {}
local function shape(sh)
  local v = {interval = ARGV[sh] + 0, horizon = ARGV[sh + 1] + 0, ttl = ARGV[sh + 2], calendars = 0}
  for c = 1, ARGV[sh + 3] + 0 do
    local k = sh + 4 + 5 * (c - 1)
    local kind = ARGV[k] + 0
    local cap = {kind = kind, window = ARGV[k + 1] + 0, limit = ARGV[k + 2] + 0,
                 channel = ARGV[k + 3] + 0}
    if kind == 1 then
      cap.bound = 1 + 2 * v.calendars
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
  v.bounds = '>' .. rep('i8', 2 * v.calendars)
  shapes[sh] = v
  return v
end

-- The decoded log of the send being decided, the times a rolling cap counts, and the ZADD
-- arguments of the counters a logged send changes: reused.
local times, ids, inside, writes = {}, {}, {}, {}

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

-- Decodes a user's key, member, score, ... as read: the log into times and ids (oldest first),
-- the counters into a table by member. Returns the log's length, the counters and their number;
-- -1 if the log holds member (a replay); nil if the entries are out of order.
local function decode(log, member)
  local n, counters, held, last = 0, nil, 0, -huge
  for i = 1, #log, 2 do
    local m = log[i]
    if m == member then
      return -1
    end
    local t = log[i + 1] + 0
    if t < last then
      return nil
    end
    last = t
    if t <= 0 and byte(m) < 32 then
      counters = counters or {}
      counters[m] = -t
      held = held + 1
    else
      n = n + 1
      times[n], ids[n] = t, m
    end
  end
  return n, counters, held
end

local function decide(key, score, member, bounds, v, probe)
  local now = score + 0
  -- ZSCAN hands a small sorted set (a listpack: up to zset-max-listpack-entries, 128 by default)
  -- over whole and in order, each score as stored, an integer; ZRANGE WITHSCORES prints each score
  -- as a double (%.17g), a third of a microsecond per entry on Redis 7.0. A set in a skip list
  -- comes in parts or out of order, and is read again with ZRANGE. (Numbers go to redis.call() as
  -- strings: Redis prints a Lua number argument as a double too.)
  -- (redis.pcall costs what redis.call does: an error comes back as a table instead of failing
  -- the whole call, and every other send of the call is decided)
  local scan = tryCall('ZSCAN', key, '0')
  if scan.err then
    return 5, scan.err
  end
  local n, counters, held
  if scan[1] == '0' then
    n, counters, held = decode(scan[2], member)
  end
  if n == nil then
    n, counters, held = decode(call('ZRANGE', key, '0', '-1', 'WITHSCORES'), member)
  end
  if n < 0 then
    return 1, 0, 0, now
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
      if channel == 0 then
        -- the log is in time order: the sends it counts are the newest, from times[first]
        local first = n + 1
        while first > 1 and times[first - 1] > after do
          first = first - 1
        end
        count = n + 1 - first
        -- the oldest counted sends leave the window one by one: one more fits when the
        -- (count - limit + 1)-th oldest has left
        if count >= limit then
          at = times[first + count - limit] + window
        end
      else
        for i = 1, n do
          local t = times[i]
          if t > after and floor(byte(ids[i]) / 32) == channel then
            count = count + 1
            inside[count] = t
          end
        end
        if count >= limit then
          at = inside[count - limit + 1] + window
        end
      end
    elseif kind == 1 then
      local start, stop = bounds[cap.bound], bounds[cap.bound + 1]
      for i = 1, n do
        local t = times[i]
        if t >= start and t < stop and (channel == 0 or floor(byte(ids[i]) / 32) == channel) then
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
    call('ZADD', key, score, member)
  else
    call('ZADD', key, score, member, unpack(writes, 1, w))
  end
  call('PEXPIRE', key, v.ttl)
  return 0, 0, 0, now
end

-- (one string each for the outcomes that carry nothing more)
local ALLOWED, REPLAY, NOT_A_REPLAY, pack = char(0), char(1), char(4), struct.pack
local result = {}
local sends, p, bounds = ARGV[#ARGV], 1, nil
for i = 1, #KEYS do
  local sh, score, member
  sh, score, member, p = sunpack('>hBc0c5', sends, p)
  local probe = sh < 0
  if probe then
    sh = -sh
  end
  local v = shapes[sh] or shape(sh)
  if v.calendars > 0 then
    bounds = {sunpack(v.bounds, sends, p)}
    p = bounds[#bounds]
  end
  local outcome, cap, count, nextEligible = decide(KEYS[i], score, member, bounds, v, probe)
  if outcome == 0 then
    result[i] = ALLOWED
  elseif outcome == 2 then
    result[i] = pack('>BI2I4i8', 2, cap, count, nextEligible)
  elseif outcome == 3 then
    result[i] = pack('>Bi8', 3, nextEligible)
  elseif outcome == 5 then
    local error = sub(cap, 1, 255)
    result[i] = pack('>BB', 5, #error) .. error
  else
    result[i] = outcome == 1 and REPLAY or NOT_A_REPLAY
  end
end
return table.concat(result)
