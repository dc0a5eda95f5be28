-- Pauses an on-sale that runs (open, or closed): admission stops at once, every place is
-- kept and the gate stays shut; `open` resumes. Returns {1}; {-409} when it has not opened
-- yet or ended (nothing to pause), or {-404}/{-503}.
local epoch, refused = live_show()
if refused then return refused end
local ph = phase()
if ph == 0 or ph == 4 then return {-409, ph} end
enter_phase('paused', epoch, nil)
return {1}
