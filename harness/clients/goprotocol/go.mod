module kchaos/goprotocol

go 1.26.0
