# One image with every outflow binary; docker-compose.yml picks the command.
# The runtime image is distroless (no shell, no curl): the compose
# healthchecks run cmd/healthcheck. .dockerignore keeps .git, bin/, .data/
# and .env out of the build context.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
# The library's modules, which go.mod replaces with these directories.
COPY outbox/go.mod outbox/go.sum ./outbox/
COPY outbox/natspub/go.mod outbox/natspub/go.sum ./outbox/natspub/
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/ ./worker ./starter ./cmd/orderapi ./cmd/providersim ./cmd/outboxctl ./cmd/codecserver ./cmd/inventory ./cmd/healthcheck

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER nonroot:nonroot
ENTRYPOINT []
