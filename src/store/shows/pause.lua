-- Pauses an on-sale that runs (open, or closed): admission stops at once, every place is
-- kept and the gate stays shut; `open` resumes. Answers the outcome `paused`, or
-- `not_running` with its `phase` when it has not opened yet or ended (nothing to pause).
local epoch, refused = live_show()
if refused then return refused end
local ph = phase()
if ph == 0 or ph == 4 then return {outcome = 'not_running', phase = PHASE_NAME[ph]} end
enter_phase('paused', epoch, nil)
return {outcome = 'paused'}
