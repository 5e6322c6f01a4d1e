# syntax=docker/dockerfile:1
#
# The vsphere-descheduler image: the release binary on distroless, nothing else.
#
#   docker build -t vsphere-descheduler:0.1.0 .
#
# For reproducible builds, pin both base images by digest (FROM image@sha256:…).

FROM rust:1-bookworm AS build
WORKDIR /src
# Only what the build reads; .dockerignore keeps target/, .git/ and the rest out of the context.
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY examples ./examples
# --locked: build exactly the dependency versions in Cargo.lock, or fail.
# The caches speed up rebuilds; the binary is copied out of the cached target dir in this step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked \
    && install -D -m 0755 target/release/vsphere-descheduler /out/vsphere-descheduler

# cc: glibc and libgcc for the Rust binary; also CA certificates (/etc/ssl/certs), which the
# binary trusts for vCenter and the API server besides any --vsphere-ca-file.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/vsphere-descheduler /usr/local/bin/vsphere-descheduler
# The distroless "nonroot" user; the chart's securityContext runs as the same uid.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/vsphere-descheduler"]
CMD ["--help"]
