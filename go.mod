module github.com/logtally/logtally

go 1.26.8

require (
	github.com/fsnotify/fsnotify v1.6.0
	github.com/gorilla/mux v1.8.1
	github.com/satyrius/gonx v1.3.1-0.20181123214749-d96bd26e3b2c
	go.etcd.io/bbolt v1.5.0
)

require (
	github.com/smartystreets/goconvey v1.8.1 // indirect
	golang.org/x/sys v0.45.0 // indirect
)
