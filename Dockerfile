# Build: the server's release binary, with the askama templates compiled in. The whole
# workspace is copied (Cargo reads client/Cargo.toml to resolve it), but only the server is
# built: none of the clients' crates (reqwest, plotters, …) is compiled into the image.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p waiting-room --bin waiting-room

# Run: a small Debian with the binary and the static files of the waiting page.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /app waiting-room
WORKDIR /app
COPY --from=build /src/target/release/waiting-room /usr/local/bin/waiting-room
COPY static ./static
USER waiting-room
ENV BIND=0.0.0.0:8080 \
    RUST_LOG=info
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=2s --retries=3 CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["waiting-room"]
