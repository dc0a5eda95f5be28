-- The gate's question: does ARGV[7] hold a running admission of this show's epoch?
-- Returns {1} or {0}, or {-404}/{-503}.
local epoch, refused = live_show()
if refused then return refused end
if admitted(ARGV[7], epoch) then return {1} end
return {0}
