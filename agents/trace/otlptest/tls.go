package otlptest

import (
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made for one test: a collector behind a private CA, and
// clients with certificates it signed (mutual TLS).
type CA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	serial int64
	dir    string
}

// NewCA generates a CA whose files go to a temporary directory of t.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "stoke test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("create CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{cert: cert, key: key, serial: 1, dir: t.TempDir()}
}

// CertFile writes the CA's certificate as PEM and returns the file's path: what
// OTEL_EXPORTER_OTLP_CERTIFICATE names.
func (ca *CA) CertFile(t testing.TB) string {
	t.Helper()
	return writePEM(t, filepath.Join(ca.dir, "ca.pem"), "CERTIFICATE", ca.cert.Raw)
}

// Pool returns a pool holding only the CA's certificate.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// ServerTLS returns a server configuration with a certificate for 127.0.0.1, ::1 and
// localhost signed by the CA. With clientAuth, clients must show a certificate the CA
// signed.
func (ca *CA) ServerTLS(t testing.TB, clientAuth bool) *tls.Config {
	t.Helper()
	cert := ca.issue(t, "collector", x509.ExtKeyUsageServerAuth)
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientAuth {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = ca.Pool()
		// TLS 1.2: a client without a certificate is refused within its handshake. Under
		// TLS 1.3 the refusal comes after it, and races the request's write, so what the
		// client reports (the alert, or a closed connection) would depend on timing.
		cfg.MaxVersion = tls.VersionTLS12
	}
	return cfg
}

// ClientFiles issues a client certificate and writes it and its key as PEM; it returns
// the paths that OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY name.
func (ca *CA) ClientFiles(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	cert := ca.issue(t, "stoke", x509.ExtKeyUsageClientAuth)
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile = writePEM(t, filepath.Join(ca.dir, "client.pem"), "CERTIFICATE", cert.Certificate[0])
	keyFile = writePEM(t, filepath.Join(ca.dir, "client-key.pem"), "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

// issue returns a certificate the CA signed, with its key.
func (ca *CA) issue(t testing.TB, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key := newKey(t)
	ca.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("issue %s certificate: %v", name, err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writePEM(t testing.TB, path, typ string, der []byte) string {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Body reads a request's body, gunzipped when its Content-Encoding is gzip. A gzip body
// that does not decompress fails the test.
func Body(t testing.TB, r *http.Request) []byte {
	t.Helper()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("read the request body: %v", err)
		return nil
	}
	if r.Header.Get("Content-Encoding") != "gzip" {
		return body
	}
	return Gunzip(t, body)
}

// Gunzip decompresses a gzip body; one that does not decompress fails the test.
func Gunzip(t testing.TB, body []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Errorf("gzip body: %v", err)
		return nil
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Errorf("gzip body: %v", err)
		return nil
	}
	return out
}
