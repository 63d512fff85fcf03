/**
 * A rate limit's line per key: the jobs refused by it, scored by their places (when they became
 * ready) in `<rate>:line:<max>/<per>`, and by when their turn comes in `…:due`. Each waiter is
 * told to come back at its turn, so the line passes the limit in order and each job is fetched
 * about twice, instead of every waiter racing for each slot that frees. The line's name carries
 * the limit, so a changed limit starts a line of its own; `<rate>:lines` names the key's lines,
 * which a job leaves all at once when it passes. Needs scripts.ts' PRELUDE.
 */
export const RATE_LINE = `
local function rateLineOf(key, max, per) return key .. ':line:' .. max .. '/' .. per end
-- Waiters whose turn came but who are not coming leave the line, so that those behind them stop
-- waiting: at once one whose job is gone (its run was cancelled, its job removed), and one whose
-- turn passed graceMs ago (a worker that died holds its job). A waiter is 'queue|jobId', its job
-- BullMQ's hash '<jobPrefix><queue>:<jobId>'.
local function dropAbsentWaiters(line, graceMs, jobPrefix)
  local due = line .. ':due'
  local past = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'WITHSCORES')
  for k = 1, #past, 2 do
    local w = past[k]
    local split = string.find(w, '|', 1, true)
    local lapsed = tonumber(past[k + 1]) <= now - graceMs
    if lapsed or (split and redis.call('EXISTS', jobPrefix .. string.sub(w, 1, split - 1) .. ':' .. string.sub(w, split + 1)) == 0) then
      redis.call('ZREM', line, w)
      redis.call('ZREM', due, w)
    end
  end
end
-- When the waiter at rank (0-based) may start, if each one ahead starts at its own turn: the
-- starts the limit still counts free their slots oldest first, each every per.
local function rateTurn(key, max, per, rank)
  local round = math.floor(rank / max)
  local slot = rank % max
  local last = redis.call('ZRANGE', key, -max, -1, 'WITHSCORES')
  local free = max - #last / 2
  local turn = now + round * per
  if slot >= free then turn = math.max(turn, tonumber(last[2 * (slot - free) + 2]) + (round + 1) * per) end
  return turn
end
-- Records the refused waiter's turn and answers how long until it: never before the turn of the
-- one just ahead of it, which may have been told a later one while the line ahead was longer.
local function waitInLine(key, line, max, per, waiter, rank, graceMs)
  local turn = rateTurn(key, max, per, rank)
  if rank > 0 then
    local before = redis.call('ZRANGE', line, rank - 1, rank - 1)
    local beforeTurn = tonumber(redis.call('ZSCORE', line .. ':due', before[1]) or now)
    if beforeTurn > turn then turn = beforeTurn end
  end
  redis.call('ZADD', line .. ':due', turn, waiter)
  redis.call('SADD', key .. ':lines', line)
  for _, k in ipairs({line, line .. ':due', key .. ':lines'}) do extendTtl(k, turn - now + graceMs) end
  return turn - now
end
`;
