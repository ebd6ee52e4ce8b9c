package main

import "net"

// netListen reserves a loopback port (the core listens only on 127.0.0.1).
func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
