//! The Redis store's Lua walks drawn places with the same permutation as Rust (`src/draw/`):
//! the prelude's `permutation`, `drawn_place` and `drawn_arrival`, run in a real redis-server,
//! give `Permutation::place` and its inverse for every n tried.

use waiting_room::draw::Permutation;

use crate::support::redis::RedisServer;

const KEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00123456789abcdef0123456789abcdef";

/// The prelude with an epilogue that answers, for every arrival of `ARGV[2..]`, its drawn
/// place among `n` and the arrival that place walks back to.
const SCRIPT_TAIL: &str = r#"
local n = tonumber(ARGV[2])
local p = permutation(ARGV[3], n)
local out = {}
for i = 4, #ARGV do
  local k = drawn_place(p, tonumber(ARGV[i]))
  out[#out + 1] = k
  out[#out + 1] = drawn_arrival(p, k)
end
return out
"#;

#[tokio::test]
async fn the_lua_draws_the_places_rust_draws() {
    let redis = RedisServer::start().await;
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let prelude = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/store/redis/prelude.lua"
    ));
    let script = redis::Script::new(&format!("{prelude}\n{SCRIPT_TAIL}"));
    for n in [1u64, 2, 3, 70, 255, 256, 257, 4097, 1_000_000] {
        let arrivals: Vec<u64> = [1, 2, 3, n / 2, n - 1, n]
            .into_iter()
            .filter(|&a| a >= 1 && a <= n)
            .collect();
        let mut call = script.prepare_invoke();
        call.arg(r#"{"keys":[]}"#).arg(n).arg(KEY);
        for a in &arrivals {
            call.arg(*a);
        }
        let lua: Vec<u64> = call.invoke_async(&mut conn).await.unwrap();
        let p = Permutation::new(KEY, n).unwrap();
        for (i, &a) in arrivals.iter().enumerate() {
            assert_eq!(lua[2 * i], p.place(a), "n {n}, arrival {a}: the place");
            assert_eq!(lua[2 * i + 1], a, "n {n}, arrival {a}: walked back");
        }
    }
}
