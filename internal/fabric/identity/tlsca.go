package identity

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// TLS for a served fabric: clients such as az refuse bearer tokens over
// plain HTTP, so `fabric serve --tls` serves HTTPS with a certificate of
// its own private CA. The CA is made once and kept beside the state file,
// so a client trusts it once (REQUESTS_CA_BUNDLE, SSL_CERT_FILE) and keeps
// trusting it across restarts.

// TLSFiles are the files of a fabric's TLS setup, all PEM.
type TLSFiles struct {
	Dir    string
	CA     string // the CA certificate clients trust
	CAKey  string
	Cert   string // the server certificate, signed by the CA
	Key    string
	Hosts  []string // names and addresses the server certificate is for
	Issued bool     // EnsureTLS made a new server certificate
}

// TLSDir is where the TLS files of the fabric whose state file is
// stateFile live: a "tls" directory beside it.
func TLSDir(stateFile string) string { return filepath.Join(filepath.Dir(stateFile), "tls") }

// defaultTLSHosts are in every server certificate.
var defaultTLSHosts = []string{"localhost", "127.0.0.1", "::1"}

// EnsureTLS makes sure dir holds a CA and a server certificate for hosts
// (besides localhost, 127.0.0.1 and ::1). An existing CA is kept; the
// server certificate is made again only when it is missing, expires within
// a day, or does not cover every host.
func EnsureTLS(dir string, hosts ...string) (TLSFiles, error) {
	f := TLSFiles{
		Dir: dir, CA: filepath.Join(dir, "ca.pem"), CAKey: filepath.Join(dir, "ca-key.pem"),
		Cert: filepath.Join(dir, "server.pem"), Key: filepath.Join(dir, "server-key.pem"),
	}
	for _, h := range append(slices.Clone(defaultTLSHosts), hosts...) {
		if h != "" && !slices.Contains(f.Hosts, h) {
			f.Hosts = append(f.Hosts, h)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, fmt.Errorf("fabric TLS directory %s: %w", dir, err)
	}
	ca, caKey, err := loadPair(f.CA, f.CAKey)
	if errors.Is(err, fs.ErrNotExist) {
		ca, caKey, err = newCA(f.CA, f.CAKey)
	}
	if err != nil {
		return f, err
	}
	if cert, _, err := loadPair(f.Cert, f.Key); err == nil && covers(cert, f.Hosts) &&
		time.Until(cert.NotAfter) > 24*time.Hour && cert.CheckSignatureFrom(ca) == nil {
		return f, nil
	}
	if err := newServerCert(f, ca, caKey); err != nil {
		return f, err
	}
	f.Issued = true
	return f, nil
}

// ServerConfig is the tls.Config of a server with f's certificate.
func (f TLSFiles) ServerConfig() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("loading the fabric's server certificate %s: %w", f.Cert, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

func covers(cert *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

func loadPair(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, err
	}
	kb, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	cblock, _ := pem.Decode(cb)
	kblock, _ := pem.Decode(kb)
	if cblock == nil || kblock == nil {
		return nil, nil, fmt.Errorf("%s or %s is not PEM: remove both to make new ones", certFile, keyFile)
	}
	cert, err := x509.ParseCertificate(cblock.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", certFile, err)
	}
	key, err := x509.ParseECPrivateKey(kblock.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", keyFile, err)
	}
	return cert, key, nil
}

func newCA(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "routekeeper fabric CA", Organization: []string{"routekeeper"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the fabric CA: %w", err)
	}
	if err := writePair(certFile, keyFile, der, key); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func newServerCert(f TLSFiles, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: f.Hosts[0], Organization: []string{"routekeeper"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range f.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("creating the fabric's server certificate: %w", err)
	}
	return writePair(f.Cert, f.Key, der, key)
}

func writePair(certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", keyFile, err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", certFile, err)
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic("fabric: no randomness: " + err.Error())
	}
	return n
}
