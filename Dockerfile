# logtally in a container, as a sidecar of nginx sharing its log directory.
#
#   docker build -t logtally .
#   docker run -v nginx-logs:/var/log/nginx:ro -v logtally-data:/data -p 8080:8080 logtally
#
# The image holds one static binary and nothing else; it runs as a non-root
# user, keeps its database in the /data volume and reads the logs read-only.
# Port 8080 is the public listener (the read-only figures a page may poll);
# the admin listener (status, metrics, dashboard) stays on the container's
# loopback, 127.0.0.1:8081: see docs/operations.md#containers to reach it.
# deploy/check-image.sh builds it with podman or buildah and checks /data;
# the base images have their registries in their names, which those tools
# do not guess.
FROM docker.io/library/golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/logtally ./cmd/logtally
# The distroless image has no shell to create /data with: make it here, and
# copy it in owned by the user the image runs as, so that a fresh named
# volume mounted there (which takes the owner of the image's /data) can hold
# the database.
RUN mkdir /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/logtally /usr/local/bin/logtally
COPY --from=build --chown=65532:65532 /out/data /data
VOLUME /data
ENV LOGTALLY_DB=/data/logtally.db \
    LOGTALLY_PUBLIC_LISTEN=0.0.0.0:8080 \
    LOGTALLY_ADMIN_LISTEN=127.0.0.1:8081 \
    LOGTALLY_LOG_FORMAT=json
EXPOSE 8080
# nonroot of the distroless image, by number: Kubernetes' runAsNonRoot can
# only verify a numeric user.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/logtally"]
CMD ["run", "/var/log/nginx/access.log*"]
