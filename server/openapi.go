package server

func (s *Server) openAPIDocument() ([]byte, error) { return []byte(`{}`), nil }
