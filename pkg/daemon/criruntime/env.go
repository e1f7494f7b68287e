package criruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// verboseInfo is the part of ContainerStatus(verbose=true).info["info"] that holds a container's
// environment. containerd (1.6 and later) and CRI-O put there the OCI runtime spec the container
// was started with (runtimeSpec; its process.env is exactly the environment of the container's
// process: the image's env plus the kubelet's, with fieldRefs already resolved by the kubelet)
// and the CRI ContainerConfig the kubelet sent (config.envs: the kubelet's env only).
type verboseInfo struct {
	RuntimeSpec *struct {
		Process *struct {
			Env []string `json:"env"`
		} `json:"process"`
	} `json:"runtimeSpec"`
	Config *struct {
		Envs []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"envs"`
	} `json:"config"`
}

// EnvFromVerboseInfo extracts a container's environment from the info map of a verbose CRI
// ContainerStatus response: runtimeSpec.process.env when present, else config.envs. A variable
// set twice takes its last value, as in a process environment built from that list.
func EnvFromVerboseInfo(info map[string]string) (map[string]string, error) {
	raw, ok := info["info"]
	if !ok {
		return nil, errors.New(`the runtime's verbose container status has no "info" entry`)
	}
	var vi verboseInfo
	if err := json.Unmarshal([]byte(raw), &vi); err != nil {
		return nil, fmt.Errorf(`decoding the "info" entry of the verbose container status: %w`, err)
	}
	if vi.RuntimeSpec != nil && vi.RuntimeSpec.Process != nil {
		env := make(map[string]string, len(vi.RuntimeSpec.Process.Env))
		for _, kv := range vi.RuntimeSpec.Process.Env {
			k, v, _ := strings.Cut(kv, "=")
			if k != "" {
				env[k] = v
			}
		}
		return env, nil
	}
	if vi.Config != nil {
		env := make(map[string]string, len(vi.Config.Envs))
		for _, kv := range vi.Config.Envs {
			env[kv.Key] = kv.Value
		}
		return env, nil
	}
	return nil, errors.New(`the runtime's verbose container status has neither runtimeSpec.process.env nor config.envs`)
}
