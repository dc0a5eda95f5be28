-- The gate's question: does the ticket (A.ticket) hold a running admission of this show's epoch?
-- Answers {admitted}.
local epoch, refused = live_show()
if refused then return refused end
return {admitted = admitted(A.ticket, epoch)}
