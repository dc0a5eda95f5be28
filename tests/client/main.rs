//! The clients (`waiting-room fan` and `waiting-room load`) against real servers.

mod fan;
mod helpers;
mod load;
