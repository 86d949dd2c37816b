"""A TLS-terminating relay for the HTTPS tests: accepts TLS on a loopback port with the given certificate and key,
and relays each connection's bytes to a plain-HTTP upstream on loopback. Prints "listening PORT" once ready.
Usage: tls_relay.py CERT KEY UPSTREAM_PORT. Stops when its standard input closes."""
import socket
import ssl
import sys
import threading

cert, key, upstream = sys.argv[1], sys.argv[2], int(sys.argv[3])
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.minimum_version = ssl.TLSVersion.TLSv1_2
context.load_cert_chain(cert, key)
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(64)


def pump(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        # Either side ending ends both: the client sees the upstream's close at once (a dropped answer).
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except (OSError, ValueError):
                pass
            try:
                end.close()
            except (OSError, ValueError):
                pass


def serve(raw):
    try:
        client = context.wrap_socket(raw, server_side=True)
    except (ssl.SSLError, OSError):
        raw.close()
        return
    server = socket.create_connection(("127.0.0.1", upstream))
    threading.Thread(target=pump, args=(server, client), daemon=True).start()
    pump(client, server)


def accept():
    while True:
        raw, _ = listener.accept()
        threading.Thread(target=serve, args=(raw,), daemon=True).start()


threading.Thread(target=accept, daemon=True).start()
print("listening", listener.getsockname()[1], flush=True)
sys.stdin.read()
