# taskgov's image: taskgov-extender and team-namespaces on a slim Debian 12 runtime.
#   docker build --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) -t taskgov-extender:0.1.0 .
# Build stage: Debian 12 with the repository's own tools/bootstrap (Debian packages only; Bazel
# builds offline) and an optimised build. Runtime stage: exactly the shared-library packages the
# binaries load (//deploy:image_test checks them against `ldd` of the built binaries), a
# non-root user, nothing written outside /tmp (run it with a read-only root filesystem and an
# emptyDir at /tmp, as deploy/base/deployment.yaml does).

FROM debian:12 AS build
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
COPY . .
RUN tools/bootstrap \
    && bazel build -c opt //extender:taskgov-extender //deploy:team-namespaces \
    && install -D -m 0755 bazel-bin/extender/taskgov-extender /out/taskgov-extender \
    && install -D -m 0755 bazel-bin/deploy/team-namespaces /out/team-namespaces

FROM debian:12-slim
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="taskgov-extender" \
      org.opencontainers.image.description="kube-scheduler extender governing how teams share GPU and Trainium quota" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="debian:12-slim"
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
       libc6 \
       libgcc-s1 \
       libstdc++6 \
       libssl3 \
       libyaml-cpp0.7 \
       libprometheus-cpp-core1.0 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 65532 taskgov \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin taskgov
COPY --from=build /out/taskgov-extender /out/team-namespaces /usr/local/bin/
USER 65532:65532
EXPOSE 8888 8443 9090
ENTRYPOINT ["/usr/local/bin/taskgov-extender"]
