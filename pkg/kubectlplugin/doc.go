// Package kubectlplugin is `kubectl inplace`, the operators' kubectl plugin: rollout
// status|history|undo|pause|resume|restart, set image and scale of CloneSets, Advanced
// StatefulSets and Advanced DaemonSets, and in-place update and container recreate of one Pod
// through the apps.kruise.io Pod subresources. One file per command; each command is Options
// (flags) -> Complete (clients, arguments) -> Validate -> Run, as kubernetes/sample-cli-plugin and
// kubectl's own commands are written. What a command decides (which revision to roll back to,
// whether a rollout is done or stuck, the body of a request) is a pure function beside it, tested
// by table; the I/O goes through a Factory, which tests fill with fake clientsets.
//
// It mirrors OpenKruise's `kubectl kruise` (openkruise/kruise-tools) and kubectl's own rollout,
// set image and scale: the same flags and the same output sentences where the same thing happens.
package kubectlplugin
