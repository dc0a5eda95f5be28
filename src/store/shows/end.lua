-- Ends the on-sale, with A.reason (why, optional): admission stops, joins are refused, the
-- gate stays shut (fans admitted before may still buy within their admission) and every fan
-- still queued is told it ended. Answers {ended = true}.
local epoch, refused = live_show()
if refused then return refused end
enter_phase('ended', epoch, A.reason)
return {ended = true}
