# logtally in a container, as a sidecar of nginx sharing its log directory.
#
#   docker build -t logtally .
#   docker run -v nginx-logs:/var/log/nginx:ro -v logtally-data:/data -p 8080:8080 logtally
#
# The image holds one static binary and nothing else; it runs as a non-root
# user, keeps its database in the /data volume and reads the logs read-only.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/logtally ./cmd/logtally

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/logtally /usr/local/bin/logtally
VOLUME /data
ENV LOGTALLY_DB=/data/logtally.db \
    LOGTALLY_LISTEN=0.0.0.0:8080 \
    LOGTALLY_LOG_FORMAT=json
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/logtally"]
CMD ["run", "/var/log/nginx/access.log*"]
