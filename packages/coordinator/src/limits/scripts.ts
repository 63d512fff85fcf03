/**
 * The gate's Lua scripts. Every time comes from Redis `TIME`, so the clocks of worker processes
 * never matter. A semaphore is a ZSET whose members are `<weight>:<permit id>` scored by lease
 * expiry (ms); a rate limit is a ZSET of permit ids scored by start time (a sliding-window log).
 * Keys expire on their own once every entry in them would have, so an idle limit leaves nothing.
 */

import { RATE_LINE } from "./rate-line-script.js";

/** Milliseconds since the epoch on the Redis server, and TTL helpers that only ever extend. */
export const PRELUDE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function extendTtl(key, ms)
  if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, ms) end
end
`;

/**
 * A semaphore's used weight is kept in `<sem>:used` beside its ZSET, so that taking or freeing a
 * slot costs a few O(log n) steps instead of reading every holder: a pool of 1,000 slots would
 * otherwise cost each start a scan of up to 1,000 members. The count expires with the ZSET, and is
 * counted afresh from the members whenever it is missing (a ZSET written before it existed) or
 * the ZSET is empty. Needs PRELUDE's `now` and `extendTtl`.
 */
export const SEMAPHORE = `
local function weightOf(member) return tonumber(string.match(member, '^(%d+):')) end
-- Counts the members' weights afresh into the count, with the ZSET's expiry.
local function recount(sem)
  local used = 0
  for _, m in ipairs(redis.call('ZRANGE', sem, 0, -1)) do used = used + weightOf(m) end
  local ttl = redis.call('PTTL', sem)
  if ttl > 0 then redis.call('SET', sem .. ':used', used, 'PX', ttl) else redis.call('SET', sem .. ':used', used) end
  return used
end
-- Drops holders whose lease lapsed; answers the weight still held and whether any holder went.
local function semUsed(sem)
  local count = sem .. ':used'
  local expired = redis.call('ZRANGEBYSCORE', sem, '-inf', now)
  if #expired > 0 then redis.call('ZREMRANGEBYSCORE', sem, '-inf', now) end
  local used = redis.call('GET', count)
  if redis.call('ZCARD', sem) == 0 then
    if used then redis.call('DEL', count) end
    return 0, #expired > 0
  end
  if used then
    used = tonumber(used)
    for _, m in ipairs(expired) do used = used - weightOf(m) end
  end
  if not used or used < 0 then
    used = recount(sem)
  elseif #expired > 0 then
    redis.call('SET', count, used, 'KEEPTTL')
  end
  return used, #expired > 0
end
-- Adds (or renews) a holder until expiresAt; answers whether it was not held before.
local function semHold(sem, member, expiresAt, ttlMs)
  local added = redis.call('ZADD', sem, expiresAt, member) == 1
  extendTtl(sem, ttlMs)
  if added then
    local weight = weightOf(member)
    -- A count that was missing (or wrong) next to other holders is counted afresh.
    if redis.call('INCRBY', sem .. ':used', weight) == weight and redis.call('ZCARD', sem) > 1 then recount(sem) end
  end
  extendTtl(sem .. ':used', ttlMs)
  return added
end
-- A refused request marks its semaphore until the next slot frees (or a lease passes), so that
-- only a freed slot somebody waits for is published to every process.
local function refused(sem, ms)
  redis.call('SET', sem .. ':refused', 1, 'PX', ms)
end
local function waitedFor(sem)
  return redis.call('DEL', sem .. ':refused') == 1
end
-- Removes a holder; answers whether it was held.
local function semFree(sem, member)
  if redis.call('ZREM', sem, member) == 0 then return false end
  if redis.call('ZCARD', sem) == 0 then
    redis.call('DEL', sem .. ':used')
  else
    redis.call('DECRBY', sem .. ':used', weightOf(member))
  end
  return true
end
`;

/**
 * A semaphore's line (`…:line`, a ZSET of waiters scored by their places: when their jobs became
 * ready) and the claims of the waiters woken from it and still on their way: `…:woken` scored by
 * when each claim lapses, `…:woken-at` by the waiter's place, so that a claimant yields to those
 * ahead of it and to nobody behind. Every claim is added and removed in both. Needs SEMAPHORE.
 */
export const CLAIMS = `
local function dropLapsedClaims(sem)
  local claims = sem .. ':woken'
  local lapsed = redis.call('ZRANGEBYSCORE', claims, '-inf', now)
  if #lapsed == 0 then return end
  redis.call('ZREMRANGEBYSCORE', claims, '-inf', now)
  for _, w in ipairs(lapsed) do redis.call('ZREM', sem .. ':woken-at', w) end
end
local function unclaim(sem, waiter)
  redis.call('ZREM', sem .. ':woken', waiter)
  redis.call('ZREM', sem .. ':woken-at', waiter)
end
-- Whether (place pa, member a) comes before (pb, b) in a ZSET: ties go byte by byte, as Redis
-- orders them. A waiter is 'queue|<run id>.<node>.<attempt>', and run ids made in one process
-- sort in the order they were made, so jobs of one task and one millisecond keep their runs' order.
local function ahead(pa, a, pb, b)
  if pa ~= pb then return pa < pb end
  for k = 1, math.min(#a, #b) do
    local x, y = string.byte(a, k), string.byte(b, k)
    if x ~= y then return x < y end
  end
  return #a < #b
end
-- Whether the line holds a waiter other than waiter before (place, waiter): its head decides.
local function lineAhead(sem, place, waiter)
  local head = redis.call('ZRANGE', sem .. ':line', 0, 0, 'WITHSCORES')
  return #head > 0 and head[1] ~= waiter and ahead(tonumber(head[2]), head[1], tonumber(place), waiter)
end
-- How many claims other than waiter's come before (place, waiter). A place whose claim is gone
-- was left by a process older than the places (one that removes claims from ':woken' only) and is
-- dropped, or it would hold the line back for as long as the key stays busy.
local function claimsBefore(sem, place, waiter)
  local n = 0
  local at = redis.call('ZRANGEBYSCORE', sem .. ':woken-at', '-inf', place, 'WITHSCORES')
  for k = 1, #at, 2 do
    local w = at[k]
    if not redis.call('ZSCORE', sem .. ':woken', w) then
      redis.call('ZREM', sem .. ':woken-at', w)
    elseif w ~= waiter and ahead(tonumber(at[k + 1]), w, tonumber(place), waiter) then
      n = n + 1
    end
  end
  return n
end
-- Pops up to capacity minus what is held and claimed of the line, and gives each woken waiter a
-- claim until claimMs from now; a claim that lapses (its job never came) frees the slot. A
-- negative capacity (the limit was removed) wakes the whole line.
local function wakeLine(sem, capacity, claimMs)
  local line = sem .. ':line'
  dropLapsedClaims(sem)
  local room = capacity - semUsed(sem) - redis.call('ZCARD', sem .. ':woken')
  if capacity < 0 then room = redis.call('ZCARD', line) end
  local woken = {}
  while room > 0 do
    local first = redis.call('ZPOPMIN', line)
    if #first == 0 then break end
    woken[#woken + 1] = first[1]
    redis.call('ZADD', sem .. ':woken', now + claimMs, first[1])
    redis.call('ZADD', sem .. ':woken-at', first[2], first[1])
    room = room - 1
  end
  if #woken > 0 then
    extendTtl(sem .. ':woken', claimMs)
    extendTtl(sem .. ':woken-at', claimMs)
  end
  return woken
end
`;

/**
 * Drops expired holders of the semaphores KEYS[1..n], publishes on `channel` the names of those
 * that lost a holder and refused someone since they last did (see `freedFor`), and returns each
 * semaphore's used weight. `nameFrom` is where the caller's key starts inside the Redis key.
 */
const PURGE = `${SEMAPHORE}
local function purge(n, channel, nameFrom)
  local freed = {}
  local used = {}
  for i = 1, n do
    local went
    used[i], went = semUsed(KEYS[i])
    if went and waitedFor(KEYS[i]) then freed[#freed + 1] = string.sub(KEYS[i], nameFrom) end
  end
  if #freed > 0 then redis.call('PUBLISH', channel, cjson.encode(freed)) end
  return used
end
`;

/**
 * KEYS: the semaphores, then the rate limits.
 * ARGV: permit id, lease ms, number of semaphores, freed channel, name offset, the config
 *       version mark's key and the caller's config version ('' when it has none to compare),
 *       then capacity and weight per semaphore, then max and window ms per rate limit.
 *       then, to park when a semaphore blocks: waiter, its job id, the waiting-keys set, the
 *       capacities hash, the parked-reasons hash, the reason, '1' when the line is first come,
 *       first served, its place in the line (when its job became ready, ms) and how long a
 *       waiter woken from the line keeps its claim (ms) (all empty strings otherwise); then '1'
 *       when the start may be only a look (a poll of a queue last found empty), which keeps no
 *       reserve when refused; then, to wait in a rate limit's line (see RATE_LINE) when refused:
 *       the waiter, its place, how long past its turn it keeps its place (ms) and the prefix of
 *       BullMQ's job keys (a waiter whose job is gone leaves the line once its turn came).
 * A parking waiter on a first-come line takes a slot only when no one is ahead of it: neither a
 * waiter in the line (see CLAIMS) with an earlier place, nor a woken waiter with an earlier place
 * still on its way (its claim holds a slot). Claims behind it do not count: a limit lowered while
 * several woken waiters travel then admits them in their order, whichever arrives first. A refused
 * waiter joins the line at its place; should that leave a slot free with nobody on the way to it
 * (the refused one yielded to a waiter still in the line), the line's head is woken in the same
 * step, and returned for the caller to promote.
 * A start that takes several slots and is refused keeps them in reserve (`…:reserve`, its weight,
 * for one lease, renewed by each of its retries): lighter starts then leave that many slots free,
 * so a stream of one-slot starts cannot take every slot the moment it frees and hold the heavier
 * one back for ever. The first start at least as heavy takes the reserve and ends it.
 * A caller on an older config version than the mark (see config-version.ts) is answered
 * {-1, newest version} before anything is read or written: its limits may be the old ones.
 * Returns {1, room} when everything was taken, where room is how many more permits of the same
 * spec would pass right now (the tightest limit decides), or {0, index of the first blocking
 * limit (1-based over KEYS), used weight for a semaphore | ms until a rate slot frees (until the
 * waiter's turn, in a rate limit's line), slots kept in reserve from this start, then the waiters
 * woken by a parking refusal}. A rate limit's waiter passes when the slots the limit has left
 * cover it and every waiter ahead of it in the line. Nothing is written unless every limit lets
 * the permit through, except that a parking waiter joins the blocking line (waking its head if a
 * slot is left free), a heavy start keeps its reserve and a rate limit's waiter joins its line (and
 * leaves it when a semaphore refuses it: it comes back to the rate limit only after that one).
 */
export const ACQUIRE = `${PRELUDE}${PURGE}${CLAIMS}${RATE_LINE}
if ARGV[7] ~= '' then
  local newest = tonumber(redis.call('GET', ARGV[6]) or '0')
  if newest > tonumber(ARGV[7]) then return {-1, newest} end
end
local id = ARGV[1]
local lease = tonumber(ARGV[2])
local nSem = tonumber(ARGV[3])
local used = purge(nSem, ARGV[4], tonumber(ARGV[5]))
local rateArgs = 7 + 2 * nSem
local parkArgs = rateArgs + 2 * (#KEYS - nSem)
local room = 1000000
local waiter = ARGV[parkArgs + 1]
local parking = waiter ~= nil and waiter ~= ''
local firstCome = parking and ARGV[parkArgs + 7] == '1'
local onlyALook = ARGV[parkArgs + 10] == '1'
local rateWaiter = ARGV[parkArgs + 11]
local rateLined = rateWaiter ~= nil and rateWaiter ~= ''
-- Out of every line of the key, the lines of its earlier limits too: one the limit returns to
-- must not keep a place for a job that has passed meanwhile.
local function leaveRateLines()
  if not rateLined then return end
  for j = 1, #KEYS - nSem do
    local lines = redis.call('SMEMBERS', KEYS[nSem + j] .. ':lines')
    lines[#lines + 1] = rateLineOf(KEYS[nSem + j], ARGV[rateArgs + 2 * j - 1], ARGV[rateArgs + 2 * j])
    for _, line in ipairs(lines) do
      redis.call('ZREM', line, rateWaiter)
      redis.call('ZREM', line .. ':due', rateWaiter)
    end
  end
end
for i = 1, nSem do
  local weight = tonumber(ARGV[7 + 2 * i])
  local capacity = tonumber(ARGV[6 + 2 * i])
  local line = KEYS[i] .. ':line'
  local taken = used[i]
  local cutsIn = false
  local place = parking and ARGV[parkArgs + 8]
  local reserve = tonumber(redis.call('GET', KEYS[i] .. ':reserve') or '0')
  -- Slots kept for a heavier start are not this one's to take.
  local kept = 0
  if reserve > weight then kept = reserve end
  if firstCome then
    dropLapsedClaims(KEYS[i])
    -- A woken waiter keeps the place it was woken from.
    place = redis.call('ZSCORE', KEYS[i] .. ':woken-at', waiter) or place
    taken = taken + claimsBefore(KEYS[i], place, waiter)
    cutsIn = lineAhead(KEYS[i], place, waiter)
  end
  room = math.min(room, math.floor((capacity - taken - kept - weight) / weight))
  if cutsIn or taken + kept + weight > capacity then
    refused(KEYS[i], lease)
    leaveRateLines()
    if weight > 1 and not onlyALook and weight >= reserve and taken + weight > capacity then
      redis.call('SET', KEYS[i] .. ':reserve', weight, 'PX', lease)
    end
    local answer = {0, i, taken, kept}
    -- Optionally join the semaphore's line in the same step, so no release can slip in between.
    if parking then
      local name = string.sub(KEYS[i], tonumber(ARGV[5]))
      -- The line is kept in the order the jobs became ready, not the order they reached a gate:
      -- two processes' fetches may arrive swapped, and woken waiters refused after all (their
      -- limit was lowered meanwhile) go back to their own places, not each to the head.
      unclaim(KEYS[i], waiter)
      redis.call('ZADD', line, 'NX', place, waiter)
      redis.call('SADD', ARGV[parkArgs + 3], name)
      redis.call('HSET', ARGV[parkArgs + 4], name, ARGV[6 + 2 * i])
      redis.call('HSET', ARGV[parkArgs + 5], ARGV[parkArgs + 2], ARGV[parkArgs + 6])
      for _, w in ipairs(wakeLine(KEYS[i], capacity, tonumber(ARGV[parkArgs + 9]))) do answer[#answer + 1] = w end
    end
    return answer
  end
end
for j = 1, #KEYS - nSem do
  local key = KEYS[nSem + j]
  local max = tonumber(ARGV[rateArgs + 2 * j - 1])
  local per = tonumber(ARGV[rateArgs + 2 * j])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - per)
  local count = redis.call('ZCARD', key)
  room = math.min(room, max - count - 1)
  local rank = 0
  local line
  if rateLined then
    line = rateLineOf(key, ARGV[rateArgs + 2 * j - 1], ARGV[rateArgs + 2 * j])
    dropAbsentWaiters(line, tonumber(ARGV[parkArgs + 13]), ARGV[parkArgs + 14])
    redis.call('ZADD', line, 'NX', ARGV[parkArgs + 12], rateWaiter)
    rank = redis.call('ZRANK', line, rateWaiter)
  end
  if count + rank >= max then
    refused(key, per)
    if rateLined then return {0, nSem + j, waitInLine(key, line, max, per, rateWaiter, rank, tonumber(ARGV[parkArgs + 13]))} end
    -- A lowered max may leave more than max entries: the slot frees when the (count - max + 1)th oldest leaves.
    local leaving = redis.call('ZRANGE', key, count - max, count - max, 'WITHSCORES')
    return {0, nSem + j, tonumber(leaving[2]) + per - now}
  end
end
for i = 1, nSem do
  local weight = tonumber(ARGV[7 + 2 * i])
  local reserve = tonumber(redis.call('GET', KEYS[i] .. ':reserve') or '0')
  if reserve > 1 and weight >= reserve then redis.call('DEL', KEYS[i] .. ':reserve') end
  semHold(KEYS[i], ARGV[7 + 2 * i] .. ':' .. id, now + lease, lease)
  if parking then
    unclaim(KEYS[i], waiter)
    -- A waiter already in the line (its job came back without being woken) leaves it.
    if firstCome then redis.call('ZREM', KEYS[i] .. ':line', waiter) end
  end
end
leaveRateLines()
for j = 1, #KEYS - nSem do
  local key = KEYS[nSem + j]
  redis.call('ZADD', key, now, id)
  extendTtl(key, tonumber(ARGV[rateArgs + 2 * j]))
end
return {1, math.max(room, 0)}
`;

/** KEYS: semaphores. ARGV: freed channel, name offset. Returns each one's used weight. */
export const USAGE = `${PRELUDE}${PURGE}
return purge(#KEYS, ARGV[1], tonumber(ARGV[2]))
`;

/**
 * KEYS: one semaphore per held (permit, semaphore) pair. ARGV: lease ms, then the member for each
 * key. Returns the 1-based indexes of members that had lapsed and were put back.
 */
export const RENEW = `${PRELUDE}${SEMAPHORE}
local lease = tonumber(ARGV[1])
local lapsed = {}
for i = 1, #KEYS do
  if semHold(KEYS[i], ARGV[1 + i], now + lease, lease) then lapsed[#lapsed + 1] = i end
end
return lapsed
`;

/**
 * KEYS: the permit's semaphores, then (for an unused permit) its rate limits.
 * ARGV: freed channel, semaphore name offset, number of semaphores, permit id, rate limit name
 * offset, then the member per semaphore.
 * Publishes the names of the freed semaphores, and of the rate slots given back, that refused
 * someone since they last freed one; returns how many entries were removed.
 */
export const RELEASE = `${PRELUDE}${SEMAPHORE}
local nSem = tonumber(ARGV[3])
local removed = 0
local freed = {}
for i = 1, #KEYS do
  local went
  local nameFrom = ARGV[2]
  if i <= nSem then
    went = semFree(KEYS[i], ARGV[5 + i])
  else
    went = redis.call('ZREM', KEYS[i], ARGV[4]) == 1
    nameFrom = ARGV[5]
  end
  if went then
    removed = removed + 1
    if waitedFor(KEYS[i]) then freed[#freed + 1] = string.sub(KEYS[i], tonumber(nameFrom)) end
  end
end
if #freed > 0 then redis.call('PUBLISH', ARGV[1], cjson.encode(freed)) end
return removed
`;
