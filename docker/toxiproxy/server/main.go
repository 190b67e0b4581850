// The Toxiproxy server kchaos runs: Toxiproxy's own server (cmd/server of the module, the same
// flags) with two toxics of kchaos's registered, which read Kafka's wire protocol on a link so that
// a fault can lose the answers to one request type (kafka.go).
package main

import (
	"flag"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/Shopify/toxiproxy/v2"
)

func main() {
	host := flag.String("host", "localhost", "host for the API to listen on")
	port := flag.String("port", "8474", "port for the API to listen on")
	flag.Parse()
	logger := zerolog.New(os.Stdout).With().Timestamp().Logger().Level(zerolog.InfoLevel)
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), logger)
	go func() {
		if err := server.Listen(net.JoinHostPort(*host, *port)); err != nil {
			logger.Err(err).Msg("server finished with an error")
			os.Exit(1)
		}
	}()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	_ = server.Shutdown()
}
