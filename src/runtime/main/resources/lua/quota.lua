-- sendcap global quota: reserves tokens of one fixed window's counter, or gives unused ones back.
-- An instance reserves a batch of tokens with one call and hands them out to sends locally; the
-- counter counts every token reserved, so the window never allows more than its limit.
--
-- KEYS[1]  the window's counter (a string holding an integer)
-- ARGV[1]  tokens wanted (> 0), or tokens given back (< 0)
-- ARGV[2]  the window's limit
-- ARGV[3]  the counter's time to live in ms (set when tokens are reserved)
-- Returns {tokens granted (0 when giving back), the counter after the call}.

local want, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if want < 0 then
  local back = math.min(-want, used)
  if back > 0 then
    used = redis.call('DECRBY', KEYS[1], back)
  end
  return {0, used}
end
local grant = math.min(want, limit - used)
if grant <= 0 then
  return {0, used}
end
used = redis.call('INCRBY', KEYS[1], grant)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {grant, used}
