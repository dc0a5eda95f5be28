-- The gate's question: does the ticket (A.ticket) hold a running admission of this show's epoch?
-- Returns {1} or {0}, or {-404}/{-503}.
local epoch, refused = live_show()
if refused then return refused end
if admitted(A.ticket, epoch) then return {1} end
return {0}
