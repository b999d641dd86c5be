package protocol

// DecodeBytes is Decode without filling payloads from the generic value:
// encoding/json decodes the bytes, as before fill.go.
func DecodeBytes(data []byte) (*Message, error) { return decode(data, false) }
