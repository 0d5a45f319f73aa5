package io.smoothscale.broker;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.common.errors.GroupIdNotFoundException;

/**
 * Kafka's own view of a streams group, as one JSON object on stdout: {@code Admin.describeStreamsGroups}
 * (KIP-1071), which no Python client has yet. Run with the broker's libs on the class path:
 * {@code java -cp '<kafka libs>/*:smoothscale-broker-assignor.jar' io.smoothscale.broker.GroupView
 * [--watch-ms <interval>] <bootstrap> <group>...}: {@code {"timeMs": ..., "groups": {id: view}}}, one line per
 * interval with {@code --watch-ms}, the view {@code null} for a group that does not exist. Per member: pod ({@code smoothscale.pod} tag), rack, process, epoch, the assignment
 * it runs and its target, task offsets and end offsets; per group: epochs, state and the assignor's name.
 * A tool for the sandbox and tests; the broker's {@link GroupViewPublisher} writes the same views to a topic.
 */
public final class GroupView {
    private GroupView() {}

    public static void main(String[] args) throws Exception {
        long watchMs = 0;
        List<String> rest = List.of(args);
        if (rest.size() > 1 && rest.get(0).equals("--watch-ms")) {
            watchMs = Long.parseLong(rest.get(1));
            rest = rest.subList(2, rest.size());
        }
        if (rest.size() < 2) {
            System.err.println("usage: GroupView [--watch-ms <interval>] <bootstrap servers> <group id>...");
            System.exit(2);
        }
        Properties config = new Properties();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, rest.get(0));
        List<String> groups = rest.subList(1, rest.size());
        ObjectMapper json = new ObjectMapper();
        try (Admin admin = Admin.create(config)) {
            do {
                long started = System.currentTimeMillis();
                Map<String, Object> out = new TreeMap<>();
                out.put("timeMs", started);
                Map<String, Object> described = new TreeMap<>();
                var futures = admin.describeStreamsGroups(groups).describedGroups();
                for (String id : groups) {
                    try {
                        described.put(id, describe(futures.get(id).get(30, TimeUnit.SECONDS)));
                    } catch (ExecutionException error) {
                        if (!(error.getCause() instanceof GroupIdNotFoundException)) {
                            throw error;
                        }
                        described.put(id, null);
                    }
                }
                out.put("groups", described);
                System.out.println(json.writeValueAsString(out));
                System.out.flush();
                Thread.sleep(Math.max(0, watchMs - (System.currentTimeMillis() - started)));
            } while (watchMs > 0);
        }
    }

    static Map<String, Object> describe(StreamsGroupDescription group) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("state", String.valueOf(group.groupState()));
        view.put("groupEpoch", group.groupEpoch());
        view.put("targetAssignmentEpoch", group.targetAssignmentEpoch());
        view.put("topologyEpoch", group.topologyEpoch());
        view.put("assignor", group.assignorName().orElse(null));
        List<Map<String, Object>> subtopologies = new ArrayList<>();
        group.subtopologies().forEach(s -> {
            Map<String, Object> subtopology = new LinkedHashMap<>();
            subtopology.put("id", s.subtopologyId());
            subtopology.put("sourceTopics", s.sourceTopics());
            subtopology.put("repartitionSourceTopics", s.repartitionSourceTopics().keySet());
            subtopology.put("changelogTopics", s.stateChangelogTopics().keySet());
            subtopologies.add(subtopology);
        });
        view.put("subtopologies", subtopologies);
        List<Map<String, Object>> members = new ArrayList<>();
        for (StreamsGroupMemberDescription member : group.members()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("memberId", member.memberId());
            m.put("pod", member.clientTags().get(PlanFollower.POD_TAG));
            m.put("clientId", member.clientId());
            m.put("rack", member.rackId().orElse(null));
            m.put("processId", member.processId());
            m.put("memberEpoch", member.memberEpoch());
            m.put("clientTags", member.clientTags());
            m.put("assignment", roles(member.assignment()));
            m.put("targetAssignment", roles(member.targetAssignment()));
            m.put("taskOffsets", offsets(member.taskOffsets()));
            m.put("taskEndOffsets", offsets(member.taskEndOffsets()));
            members.add(m);
        }
        view.put("members", members);
        return view;
    }

    private static Map<String, List<String>> roles(StreamsGroupMemberAssignment assignment) {
        Map<String, List<String>> roles = new LinkedHashMap<>();
        roles.put("active", ids(assignment.activeTasks()));
        roles.put("standby", ids(assignment.standbyTasks()));
        roles.put("warmup", ids(assignment.warmupTasks()));
        return roles;
    }

    private static List<String> ids(List<StreamsGroupMemberAssignment.TaskIds> tasks) {
        List<String> ids = new ArrayList<>();
        tasks.forEach(t -> t.partitions().forEach(p -> ids.add(t.subtopologyId() + "_" + p)));
        ids.sort(null);
        return ids;
    }

    private static Map<String, Long> offsets(List<StreamsGroupMemberDescription.TaskOffset> offsets) {
        Map<String, Long> byTask = new TreeMap<>();
        offsets.forEach(o -> byTask.put(o.subtopologyId() + "_" + o.partition(), o.offset()));
        return byTask;
    }
}
