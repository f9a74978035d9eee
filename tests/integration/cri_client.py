#!/usr/bin/python3
"""A small CRI client (what a kubelet asks of containerd), for
oci_cri.bats: cri_client.py SOCKET GENDIR COMMAND ARGS...

GENDIR holds the modules grpc_tools.protoc generated from cri_api.proto
(the test makes them). Commands, each printing what it got:
  version                         runtime name and API version
  runpod NAME HANDLER LOGDIR      a pod (own pid namespace, pod ipc/net/uts): its id
  create POD PODNAME LOGDIR IMAGE NAME ARGS...  a container in the pod: its id
  start ID
  status ID                       state exit_code (state: CONTAINER_RUNNING, ...)
  exec ID TIMEOUT ARGS...         stdout on stdout, stderr on stderr, its exit code
  stoppod POD, rmpod POD
Errors: the gRPC status on stderr, exit 3."""
import sys

import grpc

sock, gendir, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
sys.path.insert(0, gendir)
import cri_api_pb2 as pb  # noqa: E402
import cri_api_pb2_grpc as pbg  # noqa: E402

rt = pbg.RuntimeServiceStub(grpc.insecure_channel("unix://" + sock))
POD_NS = pb.NamespaceOption(network=pb.POD, pid=pb.CONTAINER, ipc=pb.POD)


def pod_config(name, logdir=""):
    return pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="default"),
        hostname=name,
        log_directory=logdir,
        linux=pb.LinuxPodSandboxConfig(
            security_context=pb.LinuxSandboxSecurityContext(namespace_options=POD_NS)
        ),
    )


try:
    if cmd == "version":
        v = rt.Version(pb.VersionRequest(version="v1"), timeout=10)
        print(v.runtime_name, v.runtime_api_version)
    elif cmd == "runpod":
        name, handler, logdir = args
        r = rt.RunPodSandbox(
            pb.RunPodSandboxRequest(config=pod_config(name, logdir), runtime_handler=handler),
            timeout=60,
        )
        print(r.pod_sandbox_id)
    elif cmd == "create":
        pod, podname, logdir, image, name, argv = args[0], args[1], args[2], args[3], args[4], args[5:]
        c = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name),
            image=pb.ImageSpec(image=image),
            command=argv,
            log_path=name + ".log",
            linux=pb.LinuxContainerConfig(
                security_context=pb.LinuxContainerSecurityContext(namespace_options=POD_NS)
            ),
        )
        r = rt.CreateContainer(
            pb.CreateContainerRequest(
                pod_sandbox_id=pod, config=c, sandbox_config=pod_config(podname, logdir)
            ),
            timeout=60,
        )
        print(r.container_id)
    elif cmd == "start":
        rt.StartContainer(pb.StartContainerRequest(container_id=args[0]), timeout=60)
    elif cmd == "status":
        s = rt.ContainerStatus(pb.ContainerStatusRequest(container_id=args[0]), timeout=10).status
        print(pb.ContainerState.Name(s.state), s.exit_code)
    elif cmd == "exec":
        r = rt.ExecSync(
            pb.ExecSyncRequest(container_id=args[0], cmd=args[2:], timeout=int(args[1])),
            timeout=int(args[1]) + 10,
        )
        sys.stdout.buffer.write(r.stdout)
        sys.stderr.buffer.write(r.stderr)
        sys.exit(r.exit_code)
    elif cmd == "stoppod":
        rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=args[0]), timeout=60)
    elif cmd == "rmpod":
        rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=args[0]), timeout=60)
    else:
        sys.exit("cri_client.py: unknown command " + cmd)
except grpc.RpcError as e:
    print(f"cri_client.py {cmd}: {e.code().name}: {e.details()}", file=sys.stderr)
    sys.exit(3)
