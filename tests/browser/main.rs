//! Browser tests: the real server in-process on 127.0.0.1:0, driven in headless Chromium
//! through chromedriver (fantoccini), plus the server-rendered pages read over plain HTTP.
//!
//! They need Debian's `chromium` and `chromium-driver` (`/usr/bin/chromium`,
//! `/usr/bin/chromedriver`; override with `CHROMIUM` and `CHROMEDRIVER`) and fail loudly
//! without them. Screenshots land in `target/screenshots/`.

// A test binary is no library: its `pub` items serve its own modules.
#![allow(unreachable_pub)]

#[path = "../support/mod.rs"]
mod support;

mod accessibility;
mod challenge;
mod console;
mod console_page;
mod fair_start;
mod gateway;
mod helpers;
mod lanes;
mod languages;
mod pages;
mod phases;
mod report;
mod screenshots;
mod shop_page;
mod waiting;
